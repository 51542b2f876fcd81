package kinds

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/sluicehq/sluice/gate-controller/internal/hold"
)

func TestDefaultsRoundTripThroughTheFlag(t *testing.T) {
	defaults := Defaults()
	parsed, err := ParseTargets(FormatTargets(defaults))
	require.NoError(t, err)
	assert.Equal(t, defaults, parsed)

	var groups []string
	for _, d := range defaults {
		groups = append(groups, d.Group)
	}
	for _, g := range []string{"source.toolkit.fluxcd.io", "kustomize.toolkit.fluxcd.io", "helm.toolkit.fluxcd.io", "image.toolkit.fluxcd.io"} {
		assert.Contains(t, groups, g)
	}
	assert.Contains(t, defaults, Target{Group: "argoproj.io", Resource: "applications", Mode: hold.ModeBoth}, "Argo CD Applications are held too")
	for _, g := range SluiceGroups {
		require.NotEmpty(t, SluiceResources[g], g)
		for _, r := range SluiceResources[g] {
			assert.Contains(t, defaults, Target{Group: g, Resource: r, Mode: hold.ModeAnnotation})
		}
	}
}

func TestParseTargets(t *testing.T) {
	got, err := ParseTargets(" kustomizations.kustomize.toolkit.fluxcd.io=both , *.gating.sluice.dev=annotation,configmaps=annotation,kustomizations.kustomize.toolkit.fluxcd.io=spec")
	require.NoError(t, err)
	assert.Equal(t, []Target{
		{Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations", Mode: hold.ModeSpec},
		{Group: "gating.sluice.dev", Resource: AllResources, Mode: hold.ModeAnnotation},
		{Group: "", Resource: "configmaps", Mode: hold.ModeAnnotation},
	}, got, "a later entry for a resource replaces the earlier one in place")

	for value, want := range map[string]string{
		"": "--targets is empty",
		"kustomizations.kustomize.toolkit.fluxcd.io":         "has no mode",
		"kustomizations.kustomize.toolkit.fluxcd.io=suspend": "annotation, spec or both",
		"=both": "names no resource",
		"Kustomization.kustomize.toolkit.fluxcd.io=both": "not a plural resource name",
		"*=annotation":             "* needs a group",
		"widgets.Example.com=both": "not an API group",
		"a=both,,b=both":           "remove the extra comma",
	} {
		_, err := ParseTargets(value)
		assert.ErrorContains(t, err, want, "%q", value)
	}
}

func FuzzParseTargets(f *testing.F) {
	f.Add(FormatTargets(Defaults()))
	f.Add("*.x=spec,a.b.c=both")
	f.Add("a=b=c")
	f.Fuzz(func(t *testing.T, value string) {
		targets, err := ParseTargets(value)
		if err != nil {
			return
		}
		again, err := ParseTargets(FormatTargets(targets))
		require.NoError(t, err)
		require.Equal(t, targets, again)
	})
}

func resources(gv string, rs ...metav1.APIResource) *metav1.APIResourceList {
	return &metav1.APIResourceList{GroupVersion: gv, APIResources: rs}
}

func resource(name, kind string, verbs ...string) metav1.APIResource {
	if len(verbs) == 0 {
		verbs = []string{"get", "list", "watch", "patch", "update"}
	}
	return metav1.APIResource{Name: name, Kind: kind, Namespaced: true, Verbs: verbs}
}

func TestResolveFindsServedKindsAndReportsMissingOnes(t *testing.T) {
	disco := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		resources("kustomize.toolkit.fluxcd.io/v1",
			resource("kustomizations", "Kustomization"), resource("kustomizations/status", "Kustomization")),
		resources("gating.sluice.dev/v1alpha1",
			resource("gates", "Gate"), resource("gates/status", "Gate"), resource("readonlythings", "ReadOnlyThing", "get", "list", "watch")),
	}}}
	targets := []Target{
		{Group: "gating.sluice.dev", Resource: "gates", Mode: hold.ModeBoth},
		{Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations", Mode: hold.ModeBoth},
		{Group: "gating.sluice.dev", Resource: AllResources, Mode: hold.ModeAnnotation},
		{Group: "source.toolkit.fluxcd.io", Resource: "gitrepositories", Mode: hold.ModeBoth},
		{Group: "kustomize.toolkit.fluxcd.io", Resource: "notserved", Mode: hold.ModeBoth},
	}
	res, err := Resolve(disco, targets)
	require.NoError(t, err)
	assert.Equal(t, []Kind{
		{GVR: schema.GroupVersionResource{Group: "gating.sluice.dev", Version: "v1alpha1", Resource: "gates"}, Kind: "Gate", Namespaced: true, Mode: hold.ModeBoth},
		{GVR: schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}, Kind: "Kustomization", Namespaced: true, Mode: hold.ModeBoth},
	}, res.Kinds, "subresources and kinds that cannot be patched are left out; an entry for one resource beats its group's")
	assert.Equal(t, "kustomize.toolkit.fluxcd.io/v1", res.Kinds[1].APIVersion())
	assert.ElementsMatch(t, []Target{targets[3], targets[4]}, res.Missing)
}

func TestModeOf(t *testing.T) {
	mode, ok := ModeOf(Defaults(), schema.GroupResource{Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations"})
	assert.True(t, ok)
	assert.Equal(t, hold.ModeBoth, mode)
	mode, ok = ModeOf(Defaults(), schema.GroupResource{Group: "gating.sluice.dev", Resource: "gates"})
	assert.True(t, ok)
	assert.Equal(t, hold.ModeAnnotation, mode)
	_, ok = ModeOf(Defaults(), schema.GroupResource{Group: "apps", Resource: "deployments"})
	assert.False(t, ok)
	targets := []Target{{Group: "x.example", Resource: AllResources, Mode: hold.ModeAnnotation}, {Group: "x.example", Resource: "widgets", Mode: hold.ModeSpec}}
	mode, _ = ModeOf(targets, schema.GroupResource{Group: "x.example", Resource: "widgets"})
	assert.Equal(t, hold.ModeSpec, mode, "a target naming the resource wins over its group's")
}
