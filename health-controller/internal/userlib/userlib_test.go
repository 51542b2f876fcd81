package userlib

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/health/cel"
)

func newLibrary(t *testing.T) *Library {
	c, err := cel.NewCompiler()
	require.NoError(t, err)
	return New(c, "sluice-system", "health-library")
}

func configMap(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "sluice-system", Name: "health-library"}, Data: data}
}

var widgets = schema.GroupVersionKind{Group: "example.org", Version: "v1", Kind: "Widget"}

func TestMissingConfigMapIsAnEmptyLibrary(t *testing.T) {
	l := newLibrary(t)
	l.Update(nil)
	layer, err := l.Layer()
	require.NoError(t, err)
	_, ok := health.NewResolver(layer).Match(widgets)
	assert.False(t, ok)
	assert.Zero(t, l.Size())
}

func TestKeysFormOneLayer(t *testing.T) {
	l := newLibrary(t)
	l.Update(configMap(map[string]string{
		"widgets.yaml": "- {apiVersion: example.org/v1, kind: Widget, current: \"status.ready == true\"}",
		"gadgets.yaml": "- {apiVersion: gadgets.example.org/v1, current: \"has(self.status)\"}",
	}))
	layer, err := l.Layer()
	require.NoError(t, err)
	m, ok := health.NewResolver(layer).Match(widgets)
	require.True(t, ok)
	assert.Equal(t, health.SourceUser, m.Source)
	_, ok = health.NewResolver(layer).Match(schema.GroupVersionKind{Group: "gadgets.example.org", Version: "v2", Kind: "Gadget"})
	assert.True(t, ok, "a group-wide entry covers every kind and version")
	assert.Equal(t, 2, l.Size())
}

func TestBrokenLibraryIsAnErrorNamingTheConfigMap(t *testing.T) {
	cases := map[string]map[string]string{
		"yaml":        {"a.yaml": "- apiVersion: [nope"},
		"unknown key": {"a.yaml": "- {apiVersion: example.org/v1, kind: Widget, current: 'true', healthy: 'true'}"},
		"cel":         {"a.yaml": "- {apiVersion: example.org/v1, kind: Widget, current: \"stauts.ready\"}"},
		"duplicate across keys": {
			"a.yaml": "- {apiVersion: example.org/v1, kind: Widget, current: 'true'}",
			"b.yaml": "- {apiVersion: example.org/v1, kind: Widget, current: 'false'}",
		},
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			l := newLibrary(t)
			l.Update(configMap(data))
			layer, err := l.Layer()
			assert.Nil(t, layer)
			assert.ErrorContains(t, err, "user library ConfigMap sluice-system/health-library")
		})
	}

	l := newLibrary(t)
	l.Update(configMap(map[string]string{"a.yaml": "- {apiVersion: example.org/v1, kind: Widget, current: \"stauts.ready\"}"}))
	_, err := l.Layer()
	var ce *cel.CompileError
	require.True(t, errors.As(err, &ce), "a CEL error stays reachable for the InvalidCELExpression reason")
	assert.Equal(t, "stauts.ready", ce.Expression)

	// Fixing the ConfigMap brings the library back.
	l.Update(configMap(map[string]string{"a.yaml": "- {apiVersion: example.org/v1, kind: Widget, current: \"status.ready\"}"}))
	_, err = l.Layer()
	assert.NoError(t, err)
}
