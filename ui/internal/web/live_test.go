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
