package store

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestGateIndexFindsTheObjectsThatReferenceAGate(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{byGate: gatesOf})
	object := func(ns, name, gates string) *metav1.PartialObjectMetadata {
		m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if gates != "" {
			m.Annotations = map[string]string{"gating.sluice.dev/gates": gates}
		}
		return m
	}
	for _, o := range []*metav1.PartialObjectMetadata{
		object("apps", "web", "freeze"),                   // a name alone is in the object's namespace
		object("apps", "api", "ops/change-board, freeze"), // several gates, one elsewhere
		object("ops", "db", "change-board"),
		object("apps", "none", ""),
		object("apps", "bad", "not a/valid/ref"), // unreadable: the gate-controller reports it
	} {
		require.NoError(t, indexer.Add(o))
	}
	names := func(key string) []string {
		objs, err := indexer.ByIndex(byGate, key)
		require.NoError(t, err)
		var out []string
		for _, o := range objs {
			out = append(out, o.(*metav1.PartialObjectMetadata).Name)
		}
		return out
	}
	assert.ElementsMatch(t, []string{"web", "api"}, names("apps/freeze"))
	assert.ElementsMatch(t, []string{"api", "db"}, names("ops/change-board"))
	assert.Empty(t, names("ops/freeze"))
}

func TestStripBookkeepingKeepsTheAnnotationsThePageReads(t *testing.T) {
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "web",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}",
			"gating.sluice.dev/gates": "freeze", "reconcile.fluxcd.io/suspended": "held"}}}
	out, err := stripBookkeeping(m)
	require.NoError(t, err)
	got := out.(*metav1.PartialObjectMetadata)
	assert.Empty(t, got.ManagedFields)
	assert.Equal(t, map[string]string{"gating.sluice.dev/gates": "freeze", "reconcile.fluxcd.io/suspended": "held"}, got.Annotations)
}

// TestChartGrantsReadOnEveryTargetKind keeps charts/ui's ClusterRole and TargetKinds together:
// a kind the UI reads without the right would be "not installed" on every cluster.
func TestChartGrantsReadOnEveryTargetKind(t *testing.T) {
	rbac, err := os.ReadFile(filepath.Join("..", "..", "..", "charts", "ui", "templates", "rbac.yaml"))
	require.NoError(t, err)
	granted := map[string][]string{}
	rule := regexp.MustCompile(`- apiGroups: \[([^\]]*)\]\n\s+resources: \[([^\]]*)\]\n\s+verbs: \[get, list, watch\]\n`)
	for _, m := range rule.FindAllStringSubmatch(string(rbac), -1) {
		granted[m[1]] = append(granted[m[1]], strings.Split(m[2], ", ")...)
	}
	for _, k := range TargetKinds {
		assert.Contains(t, granted[k.Resource.Group], k.Resource.Resource, "charts/ui grants get, list and watch on %s", k.Resource.GroupResource())
	}
}
