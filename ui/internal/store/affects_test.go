package store

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// told is what a subscriber of hub was told since it last looked: each change's affected key,
// or its kind when it affects none.
func told(sub *Subscription) []string {
	var out []string
	for _, c := range sub.TakeChanges() {
		if c.Affects != "" {
			out = append(out, string(c.Affects))
		} else {
			out = append(out, c.Kind+"/"+c.Namespace+"/"+c.Name)
		}
	}
	slices.Sort(out)
	return out
}

func target(rv, gates string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", ResourceVersion: rv}}
	if gates != "" {
		m.Annotations = map[string]string{"gating.sluice.dev/gates": gates}
	}
	return m
}

func TestATargetsChangeConcernsTheGatesItNamedAndNames(t *testing.T) {
	hub := NewHub()
	sub := hub.Subscribe(nil)
	h := affecting(hub, "Kustomization", gateTargetKeys)

	h.OnAdd(target("1", "freeze, ops/cab"), false)
	assert.Equal(t, []string{"GateTargets/apps/freeze", "GateTargets/ops/cab", "Kustomization/apps/web"}, told(sub))

	h.OnUpdate(target("1", "freeze"), target("2", "freeze"))
	assert.Empty(t, told(sub), "a write that changed nothing the informer keeps (a status write) is told to no one")

	h.OnUpdate(target("2", "freeze"), target("3", "other"))
	assert.Equal(t, []string{"GateTargets/apps/freeze", "GateTargets/apps/other", "Kustomization/apps/web"}, told(sub),
		"the gate it no longer names is told once, as is the one it names now")

	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "apps/web", Obj: target("4", "other")})
	assert.Equal(t, []string{"GateTargets/apps/other", "Kustomization/apps/web"}, told(sub), "a deletion seen late, too")

	h.OnAdd(target("5", ""), false)
	assert.Equal(t, []string{"Kustomization/apps/web"}, told(sub), "an object that names no gate concerns no gate's page")
}

func TestAGatePageIsToldOnlyTheChangesOfObjectsThatNameItsGate(t *testing.T) {
	page := GateTargetsKey("apps", "freeze")
	for _, tc := range []struct {
		change Change
		want   bool
	}{
		{Change{Kind: "Kustomization", Namespace: "apps", Name: "web", Affects: "GateTargets/apps/freeze"}, true},
		{Change{Kind: "Kustomization", Namespace: "apps", Name: "web", Affects: "GateTargets/apps/other"}, false},
		{Change{Kind: "Kustomization", Namespace: "apps", Name: "web"}, false},
		{Change{Kind: "GateTargets", Namespace: "apps", Name: "freeze"}, true},
		{Change{Kind: AnyKind}, true},
	} {
		assert.Equal(t, tc.want, page.Matches(tc.change), "%+v", tc.change)
	}
	assert.False(t, Key("Kustomization").Matches(Change{Kind: "HelmRelease", Affects: "GateTargets/apps/freeze"}))
	assert.True(t, Key("GateTargets").Matches(Change{Kind: "HelmRelease", Affects: "GateTargets/apps/freeze"}), "a widened key covers it")
	assert.False(t, Key("Gate").Matches(Change{Kind: "HelmRelease", Affects: "GateTargets/apps/freeze"}), "the gates' list is not told")
}

func TestAnAgentsChangeConcernsTheBranchItDeployedAndDeploys(t *testing.T) {
	repo := func(rv, url, branch string) *unstructured.Unstructured {
		u := obj("source.toolkit.fluxcd.io/v1", "GitRepository", "flux-system", "deploy", map[string]any{"spec": map[string]any{
			"url": url, "ref": map[string]any{"branch": branch}}})
		u.SetResourceVersion(rv)
		return u
	}
	k := func(rv, source, revision string) *unstructured.Unstructured {
		u := obj("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "apps", "web", map[string]any{
			"spec":   map[string]any{"sourceRef": map[string]any{"kind": "GitRepository", "name": source, "namespace": "flux-system"}},
			"status": map[string]any{"lastAppliedRevision": revision}})
		u.SetResourceVersion(rv)
		return u
	}
	s := agentStore(t, repo("1", "https://git.example.com/acme/deploy.git", "env/dev"))
	s.Changes = NewHub()
	sub := s.Changes.Subscribe(nil)
	dev := string(agentsKey(repositoryBranch("https://git.example.com/acme/deploy", "env/dev")))
	prod := string(agentsKey(repositoryBranch("https://git.example.com/acme/deploy", "env/prod")))

	ks := affecting(s.Changes, "Kustomization", s.kustomizationAgentKeys)
	ks.OnUpdate(k("1", "deploy", "env/dev@sha1:a"), k("2", "deploy", "env/dev@sha1:b"))
	assert.Equal(t, []string{dev, "Kustomization/apps/web"}, told(sub), "a new revision applied concerns the page of its branch")
	ks.OnUpdate(k("2", "deploy", "env/dev@sha1:b"), k("3", "deploy", "env/dev@sha1:b"))
	assert.Empty(t, told(sub), "a status write that changed nothing shown is told to no one")
	ks.OnUpdate(k("3", "deploy", "env/dev@sha1:b"), k("4", "elsewhere", "env/dev@sha1:b"))
	assert.Equal(t, []string{dev, "Kustomization/apps/web"}, told(sub), "one that stops reading the branch's source concerns its page once")

	repos := s.gitRepositoryHandler()
	repos.OnUpdate(repo("1", "https://git.example.com/acme/deploy.git", "env/dev"), repo("2", "https://git.example.com/acme/deploy.git", "env/dev"))
	assert.Empty(t, told(sub))
	withStatus := repo("3", "https://git.example.com/acme/deploy.git", "env/dev")
	withStatus.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
	repos.OnUpdate(repo("2", "https://git.example.com/acme/deploy.git", "env/dev"), withStatus)
	assert.Equal(t, []string{"GitRepository/flux-system/deploy"}, told(sub), "a fetch changes no branch's agents")
	repos.OnUpdate(withStatus, repo("4", "https://git.example.com/acme/deploy.git", "env/prod"))
	assert.Equal(t, []string{dev, prod, "GitRepository/flux-system/deploy"}, told(sub), "the branch it left and the one it joined")
	repos.OnDelete(repo("5", "https://git.example.com/acme/deploy.git", "env/prod"))
	assert.Equal(t, []string{prod, "GitRepository/flux-system/deploy"}, told(sub))
}

func TestAPageNamesTheGatesAndBranchesWhoseObjectsItShows(t *testing.T) {
	s := filled(t)
	page := s.For(Everything)
	page.Referencing("a", "freeze")
	assert.Equal(t, []Key{"GateTargets/a/freeze"}, page.Reads(), "not every object of the target kinds")

	agents := agentStore(t).For(Everything)
	agents.AgentsOf("https://git.example.com/acme/deploy.git", "env/dev")
	require.Len(t, agents.Reads(), 1)
	assert.Equal(t, Key("Agents/git.example.com%2Facme%2Fdeploy%23env%2Fdev"), agents.Reads()[0])
	_, _, _, ok := ParseKey(string(agents.Reads()[0]))
	assert.True(t, ok, "an escaped repository and branch make one segment of a key")
}

// TestAChangeThatAffectsAGateIsToldOnlyToWhoMayReadTheObject: a Kustomization in namespace b
// that names a gate in a is not told to a person who may read a only, though they watch the
// gate's page; one in a is.
func TestAChangeThatAffectsAGateIsToldOnlyToWhoMayReadTheObject(t *testing.T) {
	s := filled(t)
	sub := s.For(&namespaces{allowed: map[string]bool{"a": true}}).Subscribe()
	defer sub.Close()
	s.Changes.NotifyAffecting("Kustomization", "b", "held-in-b", []Key{GateTargetsKey("a", "freeze")})
	s.Changes.NotifyAffecting("Kustomization", "a", "held-in-a", []Key{GateTargetsKey("a", "freeze")})
	<-sub.Ready
	assert.Equal(t, []string{"GateTargets/a/freeze", "Kustomization/a/held-in-a"}, told(sub))
}
