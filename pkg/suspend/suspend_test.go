package suspend

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/pkg/conditions"
)

func TestGet(t *testing.T) {
	withAnnotation := func(v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{Annotation: v}}}
	}
	cases := []struct {
		name        string
		obj         metav1.Object
		spec        bool
		wantReason  string
		wantMessage string
	}{
		{"neither", &corev1.ConfigMap{}, false, "", ""},
		{"spec", &corev1.ConfigMap{}, true, ReasonSpec, "suspended by spec.suspend"},
		{"annotation with reason", withAnnotation("db migration"), false, ReasonAnnotation, "db migration"},
		{"empty annotation still suspends", withAnnotation(""), false, ReasonAnnotation, "suspended by the reconcile.fluxcd.io/suspended annotation (no reason given)"},
		{"annotation wins over spec: it carries the reason", withAnnotation("incident 42"), true, ReasonAnnotation, "incident 42"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Get(tc.obj, tc.spec)
			assert.Equal(t, tc.wantReason != "", s.Suspended)
			assert.Equal(t, tc.wantReason, s.Reason)
			assert.Equal(t, tc.wantMessage, s.Message)
		})
	}
}

func TestSetUnsetKeepOtherAnnotations(t *testing.T) {
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"keep": "me"}}}
	Set(obj, "freeze")
	reason, ok := Reason(obj)
	assert.True(t, ok)
	assert.Equal(t, "freeze", reason)
	Unset(obj)
	_, ok = Reason(obj)
	assert.False(t, ok)
	assert.Equal(t, map[string]string{"keep": "me"}, obj.GetAnnotations())

	bare := &corev1.ConfigMap{}
	Set(bare, "x")
	assert.True(t, Get(bare, false).Suspended)
}

func TestReportAddsAndRemovesTheCondition(t *testing.T) {
	var conds []metav1.Condition
	conditions.MarkReady(&conds, 3, conditions.ReasonSucceeded, "ok")
	Report(&conds, 3, State{Suspended: true, Reason: ReasonAnnotation, Message: "audit"})
	c := conditions.Get(conds, conditions.Suspended)
	if assert.NotNil(t, c) {
		assert.Equal(t, "audit", c.Message)
	}
	assert.True(t, conditions.IsTrue(conds, conditions.Ready), "Ready keeps the last state reached")
	Report(&conds, 3, State{})
	assert.Nil(t, conditions.Get(conds, conditions.Suspended))
}
