package store

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestAKeyMatchesTheChangesOfWhatItNames(t *testing.T) {
	one := Change{Kind: "PromotionStrategy", Namespace: "a", Name: "checkout"}
	for _, tc := range []struct {
		key    Key
		change Change
		want   bool
	}{
		{"PromotionStrategy/a/checkout", one, true},
		{"PromotionStrategy/a/cart", one, false},
		{"PromotionStrategy/b/checkout", one, false},
		{"Gate/a/checkout", one, false},
		{"PromotionStrategy/a", one, true},
		{"PromotionStrategy/b", one, false},
		{"PromotionStrategy", one, true},
		{"Gate", one, false},
		{"PromotionStrategy/a/cart", Change{Kind: "PromotionStrategy", Namespace: "a"}, true},
		{"PromotionStrategy/b/cart", Change{Kind: "PromotionStrategy", Namespace: "a"}, false},
		{"Gate/a/freeze", Change{Kind: AnyKind}, true},
		{"PromotionStrategy//checkout", one, false},
		{"PromotionStrategy/a/checkout/x", one, false},
		{"", one, false},
	} {
		assert.Equal(t, tc.want, tc.key.Matches(tc.change), "%q against %+v", tc.key, tc.change)
	}
}

func TestAPageReadsTheKeysOfWhatItShows(t *testing.T) {
	s := filled(t)
	page := s.For(Everything)
	page.Strategies.Get("a", "checkout")
	page.Gates.InNamespace("b")
	page.Gates.Get("b", "freeze")
	assert.Equal(t, []Key{"Gate/b", "PromotionStrategy/a/checkout"}, page.Reads(), "a namespace's key covers its objects")
	page.StrategyList()
	assert.Equal(t, []Key{"Gate/b", "PromotionStrategy"}, page.Reads())
	assert.Empty(t, s.For(Everything).Reads(), "each page has its own reads")
	assert.Empty(t, s.Reads(), "the shared store records nothing")
}

func TestAPageOfManyObjectsWidensItsKeys(t *testing.T) {
	page := filled(t).For(Everything)
	for i := range maxKeys + 1 {
		page.Strategies.Get(fmt.Sprintf("ns-%d", i%2), fmt.Sprintf("app-%d", i))
	}
	assert.Equal(t, []Key{"PromotionStrategy/ns-0", "PromotionStrategy/ns-1"}, page.Reads())
	for i := range maxKeys {
		page.Gates.InNamespace(fmt.Sprintf("ns-%d", i))
	}
	assert.Equal(t, []Key{"Gate", "PromotionStrategy"}, page.Reads(), "still too many: every key widens to its kind")
}

func TestAnObjectAPersonMayGetIsToldByName(t *testing.T) {
	s := filled(t)
	sub := s.For(getsOnly{"a/checkout": true}).Subscribe()
	defer sub.Close()
	s.Changes.NotifyObject("PromotionStrategy", "a", "cart")
	s.Changes.NotifyObject("PromotionStrategy", "a", "checkout")
	s.Changes.Notify("PromotionStrategy", "a")
	<-sub.Ready
	assert.Equal(t, []Change{{Kind: "PromotionStrategy", Namespace: "a", Name: "checkout"}}, sub.TakeChanges(),
		"neither another object nor an unnamed change of the namespace is told")
}

// getsOnly may get the objects it names (namespace/name) and list nothing.
type getsOnly map[string]bool

func (getsOnly) MayList(schema.GroupResource, string) bool { return false }
func (g getsOnly) MayGet(_ schema.GroupResource, ns, name string) bool {
	return g[ns+"/"+name]
}
