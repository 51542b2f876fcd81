package store

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metadatafake "k8s.io/client-go/metadata/fake"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	sluicefake "github.com/sluicehq/sluice/api/generated/clientset/versioned/fake"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
)

// namespaces may list and get in the namespaces it holds, and counts what it was asked.
type namespaces struct {
	mu      sync.Mutex
	allowed map[string]bool
	asked   int
}

func (n *namespaces) MayList(_ schema.GroupResource, ns string) bool { return n.answer(ns) }
func (n *namespaces) MayGet(_ schema.GroupResource, ns, _ string) bool {
	return n.answer(ns)
}

func (n *namespaces) answer(ns string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.asked++
	return n.allowed[ns]
}

// filled is a store whose caches hold a strategy and a gate in namespaces a and b, and a
// Kustomization in each that gate a/freeze holds.
func filled(t *testing.T) *Store {
	t.Helper()
	s, err := New(sluicefake.NewClientset(), metadatafake.NewSimpleMetadataClient(runtime.NewScheme()), "")
	require.NoError(t, err)
	for _, ns := range []string{"a", "b"} {
		require.NoError(t, s.Strategies.Informer.GetIndexer().Add(&promoterv1alpha1.PromotionStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "checkout"}}))
		require.NoError(t, s.Gates.Informer.GetIndexer().Add(&gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "freeze"},
			Status: gatingv1alpha1.GateStatus{Held: []gatingv1alpha1.HeldObject{
				{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Namespace: "a", Name: "held-in-a"},
				{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Namespace: "b", Name: "held-in-b"},
			}}}))
		require.NoError(t, s.Targets[0].Informer.GetIndexer().Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held-in-" + ns,
			Annotations: map[string]string{"gating.sluice.dev/gates": "a/freeze"}}}))
	}
	return s
}

func TestAScopedStoreShowsOnlyWhatTheScopeMayRead(t *testing.T) {
	s := filled(t)
	scope := &namespaces{allowed: map[string]bool{"a": true}}
	mine := s.For(scope)
	require.Len(t, mine.StrategyList(), 1)
	assert.Equal(t, "a", mine.StrategyList()[0].Namespace)
	assert.NotNil(t, mine.PromotionStrategy("a", "checkout"))
	assert.Nil(t, mine.PromotionStrategy("b", "checkout"))
	assert.Nil(t, mine.Gate("b", "freeze"))
	assert.Empty(t, mine.Gates.InNamespace("b"))
	assert.Len(t, mine.Gates.InNamespace("a"), 1)
	held := mine.Referencing("a", "freeze")
	require.Len(t, held, 1, "a gate a person may read holds an object elsewhere: its name is not shown")
	assert.Equal(t, "held-in-a", held[0].Object.Name)
	g := mine.Gate("a", "freeze")
	require.Len(t, g.Status.Held, 1, "nor is it named among the objects the gate's status says it holds")
	assert.Equal(t, "held-in-a", g.Status.Held[0].Name)
	assert.Len(t, mine.GateList()[0].Status.Held, 1)
	assert.Len(t, s.Gate("a", "freeze").Status.Held, 2, "the cached gate is untouched")

	asked := scope.asked
	mine.StrategyList()
	mine.GateList()
	assert.Equal(t, asked, scope.asked, "a page asks once per kind and namespace, however often it lists")
	s.For(scope).StrategyList()
	assert.Equal(t, asked+2, scope.asked, "the next page asks again (the Reviewer remembers the answers)")

	assert.Len(t, s.StrategyList(), 2, "the store itself is unscoped")
	assert.Len(t, s.Referencing("a", "freeze"), 2)
	assert.Empty(t, s.For(Nothing).StrategyList())
	assert.Len(t, s.For(Everything).StrategyList(), 2)
}

func TestASubscriptionIsToldOnlyTheChangesItsScopeMayRead(t *testing.T) {
	s := filled(t)
	scope := &namespaces{allowed: map[string]bool{"a": true}}
	sub := s.For(scope).Subscribe()
	defer sub.Close()
	all := s.Subscribe()
	defer all.Close()

	s.Changes.Notify("PromotionStrategy", "b")
	<-sub.Ready
	assert.Empty(t, sub.Take(), "a change in b is not told")
	assert.Equal(t, []string{"PromotionStrategy"}, all.Take())

	s.Changes.Notify("PromotionStrategy", "b")
	s.Changes.Notify("Gate", "a")
	s.Changes.Notify(AnyKind, "")
	<-sub.Ready
	assert.Equal(t, []string{"*", "Gate"}, sub.Take())

	// The scope is asked every time, not remembered: a right revoked is seen at the next change.
	scope.mu.Lock()
	scope.allowed["a"] = false
	scope.mu.Unlock()
	s.Changes.Notify("Gate", "a")
	<-sub.Ready
	assert.Empty(t, sub.Take())
}
