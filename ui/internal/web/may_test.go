package web

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/pkg/access"
)

// TestEveryActionNamesTheRequestItsWriteNeeds: each action is offered only when RBAC allows the
// write its apply makes (pkg/actions), so each must say which; an action without one would be
// offered to everyone.
func TestEveryActionNamesTheRequestItsWriteNeeds(t *testing.T) {
	gate := url.Values{"kind": {"Gate"}}
	for name, want := range map[string]access.Request{
		"close-gate": {Verb: "update", Group: "gating.sluice.dev", Resource: "gates", Namespace: "team", Name: "x"},
		"open-gate":  {Verb: "update", Group: "gating.sluice.dev", Resource: "gates", Namespace: "team", Name: "x"},
		"suspend":    {Verb: "patch", Group: "gating.sluice.dev", Resource: "gates", Namespace: "team", Name: "x"},
		"resume":     {Verb: "patch", Group: "gating.sluice.dev", Resource: "gates", Namespace: "team", Name: "x"},
		"merge":      {Verb: "patch", Group: "promoter.sluice.dev", Resource: "pullrequests", Namespace: "team", Name: "x"},
		"revert":     {Verb: "create", Group: "rollback.sluice.dev", Resource: "revertcommits", Namespace: "team"},
		"rollback":   {Verb: "patch", Group: "rollback.sluice.dev", Resource: "manifestreleases", Namespace: "team", Name: "x"},
	} {
		got, ok := actions[name].permission("team", "x", gate)
		assert.True(t, ok, name)
		assert.Equal(t, want, got, name)
	}
	for name, a := range actions {
		assert.NotNil(t, a.permission, "action %s says what RBAC must allow", name)
	}
	_, ok := actions["suspend"].permission("team", "x", url.Values{})
	assert.False(t, ok, "suspend of a kind not chosen yet: nothing to ask")
	pr, _ := actions["suspend"].permission("team", "x", url.Values{"kind": {"PromotionStrategy"}})
	assert.Equal(t, "promotionstrategies", pr.Resource)
}

func TestARefusalReadsAsTheAPIServersOwn(t *testing.T) {
	err := forbidden("oidc:bob", access.Request{Verb: "update", Group: "gating.sluice.dev", Resource: "gates", Namespace: "team", Name: "freeze"})
	assert.Equal(t, `gates.gating.sluice.dev "freeze" is forbidden: User "oidc:bob" cannot update resource "gates" in API group "gating.sluice.dev" in the namespace "team"`, err.Error())
}
