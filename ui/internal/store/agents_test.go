package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/pkg/fluxwake"
)

func obj(apiVersion, kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: fields}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// agentStore is a Store whose agents' indexes hold objs, each passed through the informers'
// transform first, as the informers cache them.
func agentStore(t *testing.T, objs ...*unstructured.Unstructured) *Store {
	t.Helper()
	// The Sluice kinds are empty: For scopes them too.
	s := &Store{Strategies: &Kind{}, PullRequests: &Kind{}, CommitStatuses: &Kind{}, Gates: &Kind{}, HealthChecks: &Kind{},
		RevertCommits: &Kind{}, RollbackPolicies: &Kind{}, ManifestReleases: &Kind{}, Repositories: &Kind{}, Providers: &Kind{}}
	informer := func(gr schema.GroupResource, index cache.IndexFunc, name string) *Kind {
		return &Kind{Resource: gr, Informer: cache.NewSharedIndexInformer(nil, &unstructured.Unstructured{}, 0,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, name: index})}
	}
	s.Agents.Kustomizations = informer(kustomizationsGVR.GroupResource(), sourceRefOf, bySourceRef)
	s.Agents.GitRepositories = informer(fluxwake.GitRepositories.GroupResource(), gitRepositoryBranch, byDeployedBranch)
	s.Agents.Applications = informer(applicationsGVR.GroupResource(), applicationBranches, byDeployedBranch)
	for _, o := range objs {
		kept, err := keepAgentFields(o)
		require.NoError(t, err)
		k := map[string]*Kind{"Kustomization": s.Agents.Kustomizations, "GitRepository": s.Agents.GitRepositories, "Application": s.Agents.Applications}[o.GetKind()]
		require.NoError(t, k.Informer.GetIndexer().Add(kept))
	}
	return s
}

func TestAgentsOfAnEnvironmentAreWhatDeploysItsBranchOfTheRepository(t *testing.T) {
	gitRepo := func(ns, name, url, branch string) *unstructured.Unstructured {
		return obj("source.toolkit.fluxcd.io/v1", "GitRepository", ns, name, map[string]any{"spec": map[string]any{"url": url, "ref": map[string]any{"branch": branch}}})
	}
	kustomization := func(ns, name, sourceNS, source string) *unstructured.Unstructured {
		ref := map[string]any{"kind": "GitRepository", "name": source}
		if sourceNS != "" {
			ref["namespace"] = sourceNS
		}
		return obj("kustomize.toolkit.fluxcd.io/v1", "Kustomization", ns, name, map[string]any{"spec": map[string]any{"sourceRef": ref}})
	}
	pinned := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		require.NoError(t, unstructured.SetNestedField(u.Object, "3549486a9f2b55c5b7a3d5b1f2e8c7d6a5b4c3d2", "spec", "ref", "commit"))
		return u
	}
	app := func(name, url, rev string, multi bool) *unstructured.Unstructured {
		src := map[string]any{"repoURL": url, "targetRevision": rev}
		spec := map[string]any{"source": src}
		if multi {
			spec = map[string]any{"sources": []any{map[string]any{"repoURL": "https://charts.example/x", "targetRevision": "1.0.0"}, src}}
		}
		return obj("argoproj.io/v1alpha1", "Application", "argocd", name, map[string]any{"spec": spec})
	}
	s := agentStore(t,
		gitRepo("flux-system", "deploy-dev", "ssh://git@git.example.com/acme/deploy.git", "env/dev"),
		gitRepo("flux-system", "deploy-prod", "https://git.example.com/acme/deploy", "env/prod"),
		gitRepo("flux-system", "other-dev", "https://git.example.com/acme/other", "env/dev"),
		pinned(gitRepo("flux-system", "deploy-dev-approved", "https://git.example.com/acme/deploy", "env/dev")),
		pinned(gitRepo("flux-system", "deploy-commit", "https://git.example.com/acme/deploy", "")),
		kustomization("flux-system", "apps-dev", "", "deploy-dev"),
		kustomization("apps", "web-dev", "flux-system", "deploy-dev"), // another namespace names the source's
		kustomization("flux-system", "apps-prod", "", "deploy-prod"),
		kustomization("flux-system", "other", "", "other-dev"),
		kustomization("flux-system", "apps-approved", "", "deploy-dev-approved"), // a gate let one commit of env/dev through
		kustomization("flux-system", "apps-commit", "", "deploy-commit"),         // a commit of no branch named
		app("web-dev", "https://git.example.com/acme/deploy.git", "env/dev", false),
		app("web-dev-multi", "git@git.example.com:acme/deploy", "refs/heads/env/dev", true),
		app("web-prod", "https://git.example.com/acme/deploy.git", "env/prod", false),
		app("head", "https://git.example.com/acme/deploy.git", "HEAD", false),
	)
	names := func(url, branch string) []string {
		var out []string
		for _, a := range s.AgentsOf(url, branch) {
			out = append(out, a.Kind+" "+a.Object.GetNamespace()+"/"+a.Object.GetName())
		}
		return out
	}
	assert.ElementsMatch(t, []string{"Kustomization flux-system/apps-dev", "Kustomization apps/web-dev", "Kustomization flux-system/apps-approved",
		"Application argocd/web-dev", "Application argocd/web-dev-multi"}, names("https://git.example.com/acme/deploy.git", "env/dev"))
	assert.ElementsMatch(t, []string{"Kustomization flux-system/apps-prod", "Application argocd/web-prod"}, names("git@git.example.com:acme/deploy.git", "env/prod"))
	assert.Empty(t, names("https://git.example.com/acme/deploy.git", "env/staging"))
	assert.Empty(t, names("not a url", "env/dev"))

	// A person who may list Kustomizations in apps only, and no Application, sees only web-dev.
	s = s.For(listsOnly{"kustomize.toolkit.fluxcd.io/kustomizations": "apps"})
	assert.Equal(t, []string{"Kustomization apps/web-dev"}, names("https://git.example.com/acme/deploy.git", "env/dev"))
}

// listsOnly may list a resource ("group/resource") in one namespace each.
type listsOnly map[string]string

func (l listsOnly) MayList(gr schema.GroupResource, namespace string) bool {
	ns, ok := l[gr.Group+"/"+gr.Resource]
	return ok && ns == namespace
}

func (l listsOnly) MayGet(gr schema.GroupResource, namespace, _ string) bool {
	return l.MayList(gr, namespace)
}

func TestKeepAgentFieldsDropsEverythingThePageDoesNotShow(t *testing.T) {
	k := obj("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "apps", map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"gating.sluice.dev/gates": "freeze", "reconcile.fluxcd.io/suspended": "held",
			"kubectl.kubernetes.io/last-applied-configuration": "{...}"}, "labels": map[string]any{"a": "b"},
			"managedFields": []any{map[string]any{"manager": "kubectl"}}},
		"spec": map[string]any{"sourceRef": map[string]any{"kind": "GitRepository", "name": "deploy"}, "path": "./apps", "interval": "1m",
			"patches": []any{map[string]any{"patch": "a long patch"}}},
		"status": map[string]any{"lastAppliedRevision": "env/dev@sha1:abc", "inventory": map[string]any{"entries": []any{"many", "objects"}},
			"conditions": []any{
				map[string]any{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded", "message": "Applied", "lastTransitionTime": "2026-01-01T00:00:00Z"},
				map[string]any{"type": "Healthy", "status": "True"}}},
	})
	kept, err := keepAgentFields(k)
	require.NoError(t, err)
	want := map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"namespace": "flux-system", "name": "apps",
			"annotations": map[string]any{"gating.sluice.dev/gates": "freeze", "reconcile.fluxcd.io/suspended": "held"}},
		"spec": map[string]any{"sourceRef": map[string]any{"kind": "GitRepository", "name": "deploy"}},
		"status": map[string]any{"lastAppliedRevision": "env/dev@sha1:abc",
			"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded", "message": "Applied"}}},
	}
	assert.Equal(t, want, kept.(*unstructured.Unstructured).Object)
	again, err := keepAgentFields(kept)
	require.NoError(t, err)
	assert.Equal(t, want, again.(*unstructured.Unstructured).Object, "idempotent")

	a := obj("argoproj.io/v1alpha1", "Application", "argocd", "web", map[string]any{
		"spec": map[string]any{"project": "default", "sources": []any{map[string]any{"repoURL": "https://git.example.com/d", "targetRevision": "env/dev", "path": "web", "helm": map[string]any{"values": "big"}}}},
		"status": map[string]any{"sync": map[string]any{"status": "Synced", "revision": "abc", "comparedTo": map[string]any{"big": "x"}},
			"health": map[string]any{"status": "Healthy"}, "resources": []any{"many"}, "history": []any{"many"}},
	})
	kept, err = keepAgentFields(a)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": map[string]any{"namespace": "argocd", "name": "web"},
		"spec":   map[string]any{"sources": []any{map[string]any{"repoURL": "https://git.example.com/d", "targetRevision": "env/dev"}}},
		"status": map[string]any{"sync": map[string]any{"status": "Synced", "revision": "abc"}, "health": map[string]any{"status": "Healthy"}},
	}, kept.(*unstructured.Unstructured).Object)
}

// TestAPersonSeesOnlyTheAgentsTheyMayList: an environment's Kustomizations and Applications are
// named to a person only where they may list them.
func TestAPersonSeesOnlyTheAgentsTheyMayList(t *testing.T) {
	s := agentStore(t,
		obj("source.toolkit.fluxcd.io/v1", "GitRepository", "flux-system", "deploy-dev", map[string]any{"spec": map[string]any{
			"url": "https://git.example.com/acme/deploy", "ref": map[string]any{"branch": "env/dev"}}}),
		obj("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "apps", "web-dev", map[string]any{"spec": map[string]any{
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "deploy-dev", "namespace": "flux-system"}}}),
		obj("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "apps-dev", map[string]any{"spec": map[string]any{
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "deploy-dev"}}}),
		obj("argoproj.io/v1alpha1", "Application", "argocd", "web-dev", map[string]any{"spec": map[string]any{
			"source": map[string]any{"repoURL": "https://git.example.com/acme/deploy", "targetRevision": "env/dev"}}}),
	)
	assert.Len(t, s.AgentsOf("https://git.example.com/acme/deploy", "env/dev"), 3)
	mine := s.For(&namespaces{allowed: map[string]bool{"apps": true}}).AgentsOf("https://git.example.com/acme/deploy", "env/dev")
	require.Len(t, mine, 1)
	assert.Equal(t, "apps/web-dev", mine[0].Object.GetNamespace()+"/"+mine[0].Object.GetName())
}
