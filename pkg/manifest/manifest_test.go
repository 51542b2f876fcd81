package manifest

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const widgetsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets}
  versions:
    - name: v1
      served: true
      storage: true
`

func clusterMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, k := range []struct {
		gvk        schema.GroupVersionKind
		namespaced bool
	}{
		{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, false},
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, true},
		{schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, true},
		{schema.GroupVersionKind{Version: "v1", Kind: "Service"}, true},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, true},
		{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, false},
		{schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, false},
		{schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"}, false},
	} {
		scope := meta.RESTScopeRoot
		if k.namespaced {
			scope = meta.RESTScopeNamespace
		}
		m.Add(k.gvk, scope)
	}
	return m
}

func prepare(t *testing.T, files map[string]string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	raw := map[string][]byte{}
	var all []*unstructured.Unstructured
	for name, data := range files {
		raw[name] = []byte(data)
		objs, err := ParseFile(name, []byte(data))
		if err == nil {
			all = append(all, objs...)
		}
	}
	return Prepare(raw, ScopeFrom(clusterMapper(), all), "apps")
}

func TestParseFileReadsEveryDocument(t *testing.T) {
	objs, err := ParseFile("all.yaml", []byte(`# leading comment
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
---
---
# only a comment
---
apiVersion: v1
kind: List
items:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}
  - {apiVersion: v1, kind: Service, metadata: {name: c}}
---
{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}}
`))
	require.NoError(t, err)
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+"/"+o.GetName())
	}
	require.Equal(t, []string{"ConfigMap/a", "ConfigMap/b", "Service/c", "ConfigMap/d"}, got)
}

func TestParseFileNamesTheBadDocument(t *testing.T) {
	_, err := ParseFile("bad.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: b-}\n"))
	require.ErrorContains(t, err, "bad.yaml (document 2)")
	require.ErrorContains(t, err, "metadata.name")

	_, err = ParseFile("worse.yaml", []byte("kind: [unclosed\n"))
	require.ErrorContains(t, err, "worse.yaml (document 1)")

	_, err = ParseFile("nokind.yaml", []byte("apiVersion: v1\nmetadata: {name: a}\n"))
	require.ErrorContains(t, err, "no kind")
}

func TestPrepareOrdersDefaultsNamespacesAndUsesTheSetsOwnCRDs(t *testing.T) {
	objs, err := prepare(t, map[string]string{
		"b.yaml": `apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: hook}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: web}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader, namespace: ignored}
`,
		"a.yaml": widgetsCRD + "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: web}\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: web}\n",
	})
	require.NoError(t, err)
	require.Equal(t, []string{
		"CustomResourceDefinition.apiextensions.k8s.io/widgets.example.com",
		"Namespace/web",
		"ServiceAccount/apps/web",
		"ClusterRole.rbac.authorization.k8s.io/reader",
		"Deployment.apps/web/web",
		"Widget.example.com/apps/w",
		"ValidatingWebhookConfiguration.admissionregistration.k8s.io/hook",
	}, refStrings(Inventory(objs)))

	first, rest := Stages(objs)
	require.Len(t, first, 2)
	require.Len(t, rest, 5)
}

func TestPrepareRefusesDuplicatesAndUnknownKinds(t *testing.T) {
	_, err := prepare(t, map[string]string{
		"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
		"b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: apps}\n",
	})
	require.ErrorContains(t, err, "ConfigMap/apps/x appears twice, in a.yaml and in b.yaml")

	_, err = prepare(t, map[string]string{"a.yaml": "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\n"})
	require.ErrorContains(t, err, "a.yaml: the cluster does not serve example.com/v1 Gadget")
}

func TestStaleIsWhatTheNewSetDropsInPruneOrder(t *testing.T) {
	previous, err := prepare(t, map[string]string{"a.yaml": widgetsCRD + `---
apiVersion: v1
kind: Namespace
metadata: {name: web}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: old}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
`})
	require.NoError(t, err)
	current, err := prepare(t, map[string]string{"a.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"})
	require.NoError(t, err)
	// The version changed; identity did not.
	stale := Stale(Inventory(previous), Inventory(current))
	require.Equal(t, []string{
		"Widget.example.com/apps/w",
		"Deployment.apps/apps/old",
		"Namespace/web",
		"CustomResourceDefinition.apiextensions.k8s.io/widgets.example.com",
	}, refStrings(stale))
	require.Empty(t, Stale(Inventory(current), Inventory(previous)))
}

func TestCheckCRDsBlocksWhatWouldLoseData(t *testing.T) {
	v2only, err := ParseFile("crd.yaml", []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [{name: v2, served: true, storage: true}]
`))
	require.NoError(t, err)
	crdRef := Ref{Group: crdGroup, Version: "v1", Kind: "CustomResourceDefinition", Name: "gadgets.example.com"}

	require.Equal(t, []string{"gadgets.example.com", "widgets.example.com"}, CRDsToInspect(v2only, []Ref{crdRef}))

	blockers := CheckCRDs("upgrade to v2", v2only, []Ref{crdRef}, map[string]CRDState{
		"widgets.example.com": {StoredVersions: []string{"v1", "v2"}},
		"gadgets.example.com": {Objects: 3, Example: "apps/g1"},
	})
	require.Len(t, blockers, 2)
	require.Equal(t, ReasonStoredVersionDropped, blockers[0].Reason)
	require.Contains(t, blockers[0].Message, "upgrade to v2 would remove version v1 of CRD widgets.example.com")
	require.Contains(t, blockers[0].Message, "kubectl patch crd widgets.example.com --subresource=status")
	require.Equal(t, ReasonCRDHasObjects, blockers[1].Reason)
	require.Contains(t, blockers[1].Message, "its 3 objects (such as apps/g1)")
	require.Contains(t, blockers[1].Message, "kubectl get gadgets.example.com -A")

	require.Empty(t, CheckCRDs("upgrade", v2only, []Ref{crdRef}, map[string]CRDState{
		"widgets.example.com": {StoredVersions: []string{"v2"}},
		"gadgets.example.com": {Objects: 0},
	}), "a CRD without objects may go, and a version nothing is stored in may be dropped")
	require.Empty(t, CheckCRDs("upgrade", v2only, []Ref{crdRef}, nil), "nothing live, nothing to lose")
}

func TestSelects(t *testing.T) {
	filters := []Filter{{Name: "test-flux-v2.3.*"}, {Name: "*-slow", Exclude: true}}
	require.NoError(t, ValidateFilters(filters))
	require.True(t, Selects(filters, "smoke", "test-flux-v2.3.x"), "included through its ConfigMap")
	require.False(t, Selects(filters, "smoke", "test-flux-v2.2.x"), "not included")
	require.False(t, Selects(filters, "e2e-slow", "test-flux-v2.3.x"), "exclusion wins")
	require.True(t, Selects(nil, "anything"), "no filters select everything")
	require.True(t, Selects([]Filter{{Name: "old", Exclude: true}}, "new"), "only exclusions select the rest")
	require.ErrorContains(t, ValidateFilters([]Filter{{Name: "[bad"}}), `filters[0].name "[bad"`)
	require.ErrorContains(t, ValidateFilters([]Filter{{Name: ""}}), "empty")
}

func refStrings(refs []Ref) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.String()
	}
	return out
}
