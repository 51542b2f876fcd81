package web

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/ui/internal/store"
)

func TestAPageDeclaresWhatItReadAndTheKindsItDidNotRead(t *testing.T) {
	assert.Equal(t, "CommitStatus,Gate/a,PromotionStrategy/a/checkout",
		pageKeys([]store.Key{"PromotionStrategy/a/checkout", "Gate/a"}, "PromotionStrategy,Gate,CommitStatus"))
	assert.Equal(t, "", pageKeys([]store.Key{"Gate/a/freeze"}, ""), "a form is not live")
}

func TestAStreamIsToldOnlyTheKeysItAskedForThatChanged(t *testing.T) {
	keys := streamKeys("PromotionStrategy/a/checkout,Gate,bad//key,Gate")
	assert.Equal(t, []store.Key{"PromotionStrategy/a/checkout", "Gate"}, keys, "malformed and repeated keys are dropped")
	assert.Empty(t, matching(keys, []store.Change{{Kind: "PromotionStrategy", Namespace: "a", Name: "cart"}}))
	assert.Equal(t, []string{"Gate", "PromotionStrategy/a/checkout"}, matching(keys, []store.Change{
		{Kind: "PromotionStrategy", Namespace: "a", Name: "checkout"}, {Kind: "Gate", Namespace: "b", Name: "freeze"},
		{Kind: "PromotionStrategy", Namespace: "a", Name: "checkout"}}))
	assert.Equal(t, []string{"*"}, matching(keys, []store.Change{{Kind: store.AnyKind}}))
}

func TestAGatePageIsToldOfTheObjectsThatNameItsGateOnly(t *testing.T) {
	watch := pageKeys([]store.Key{"Gate/a/freeze", store.GateTargetsKey("a", "freeze")}, "Gate")
	assert.Equal(t, "Gate/a/freeze,GateTargets/a/freeze", watch, "no target kind is declared whole")
	keys := streamKeys(watch)
	assert.Empty(t, matching(keys, []store.Change{{Kind: "Kustomization", Namespace: "b", Name: "unrelated"},
		{Kind: "Kustomization", Namespace: "b", Name: "other", Affects: store.GateTargetsKey("b", "freeze")}}))
	assert.Equal(t, []string{"GateTargets/a/freeze"}, matching(keys, []store.Change{
		{Kind: "Kustomization", Namespace: "b", Name: "apps", Affects: store.GateTargetsKey("a", "freeze")}}))
}
