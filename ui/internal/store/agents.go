package store

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/pkg/fluxwake"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/runtime/crdwatch"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// Agents are the delivery agents' objects that deploy an environment: Flux Kustomizations (with
// the GitRepositories they read) and Argo CD Applications. Unlike the metadata-only Targets, the
// page shows their status, so their informers read whole objects, and a transform keeps only the
// fields shown (agentFields) before they are cached: memory grows with the number of objects,
// not with the size of their specs and inventories.
type Agents struct {
	// Kinds runs the agents' informers once their CRDs are installed. It is not the Store's: a
	// resource has one informer in a crdwatch.Kinds, and the Store's reads these kinds' metadata
	// only, for the gates' pages.
	Kinds           *crdwatch.Kinds
	Kustomizations  *Kind
	GitRepositories *Kind
	Applications    *Kind
}

var (
	kustomizationsGVR = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	applicationsGVR   = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
)

// Indexes of the agents' informers.
const (
	// bySourceRef indexes a Kustomization by the GitRepository it reads, as "namespace/name".
	bySourceRef = "sourceRef"
	// byDeployedBranch indexes a GitRepository, or an Application by each of its sources, by the
	// repository and branch it deploys (repositoryBranch): the branch it follows, or the one it is
	// pinned on while a gate lets one approved commit through.
	byDeployedBranch = "deployedBranch"
)

// WatchAgents adds the agents' informers, watching namespace (empty: all), and tells their
// changes to Changes. Run Agents.Kinds, as Kinds.
func (s *Store) WatchAgents(client dynamic.Interface, meta metadata.Interface, namespace string) error {
	kinds, err := crdwatch.NewKinds(meta)
	if err != nil {
		return err
	}
	s.Agents.Kinds = kinds
	kinds.OnChange(func() { s.Changes.Notify(AnyKind, "") })
	add := func(gvr schema.GroupVersionResource, name string, index cache.IndexFunc, indexName string, handler cache.ResourceEventHandler) (*Kind, error) {
		informer := dynamicinformer.NewFilteredDynamicInformer(client, gvr, namespace, 0,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, indexName: index}, nil).Informer()
		if err := informer.SetTransform(keepAgentFields); err != nil {
			return nil, err
		}
		_ = informer.SetWatchErrorHandlerWithContext(quietWhenRemoved)
		k := &Kind{Resource: gvr.GroupResource(), Name: name, Informer: informer, kinds: kinds}
		kinds.Add(k.Resource, informer)
		_, err := informer.AddEventHandler(handler)
		return k, err
	}
	// Each change concerns the pages of the branches the object deployed and deploys (keys.go).
	if s.Agents.Kustomizations, err = add(kustomizationsGVR, "Kustomization", sourceRefOf, bySourceRef,
		affecting(s.Changes, "Kustomization", s.kustomizationAgentKeys)); err != nil {
		return err
	}
	if s.Agents.GitRepositories, err = add(fluxwake.GitRepositories, "GitRepository", gitRepositoryBranch, byDeployedBranch,
		s.gitRepositoryHandler()); err != nil {
		return err
	}
	s.Agents.Applications, err = add(applicationsGVR, "Application", applicationBranches, byDeployedBranch,
		affecting(s.Changes, "Application", func(obj any) []Key { return indexKeys(applicationBranches, obj) }))
	return err
}

// repositoryBranch is the index key of a repository's branch.
func repositoryBranch(repoURL, branch string) string {
	return fluxwake.RepositoryKey(repoURL) + "#" + branch
}

func sourceRefOf(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	ref, _, _ := unstructured.NestedStringMap(u.Object, "spec", "sourceRef")
	if ref["kind"] != "GitRepository" || ref["name"] == "" {
		return nil, nil
	}
	ns := ref["namespace"]
	if ns == "" {
		ns = u.GetNamespace()
	}
	return []string{ns + "/" + ref["name"]}, nil
}

func gitRepositoryBranch(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	src := fluxwake.SourceOf(u)
	if src.Repository == "" || src.Branch == "" {
		return nil, nil
	}
	return []string{src.Repository + "#" + src.Branch}, nil
}

// applicationBranches are the repository branches an Application's sources follow: a
// targetRevision that names a branch (env/dev, or refs/heads/env/dev). HEAD, a tag or a SHA
// cannot be told from a branch name by the Application alone, so a targetRevision is taken as a
// branch name as written; it matches only an environment branch of that name.
func applicationBranches(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	var keys []string
	for _, src := range applicationSources(u) {
		repo, _, _ := unstructured.NestedString(src, "repoURL")
		rev, _, _ := unstructured.NestedString(src, "targetRevision")
		rev = strings.TrimPrefix(rev, "refs/heads/")
		if repo != "" && rev != "" && rev != "HEAD" {
			keys = append(keys, repositoryBranch(repo, rev))
		}
	}
	return keys, nil
}

func applicationSources(u *unstructured.Unstructured) []map[string]any {
	var out []map[string]any
	if src, ok, _ := unstructured.NestedMap(u.Object, "spec", "source"); ok {
		out = append(out, src)
	}
	list, _, _ := unstructured.NestedSlice(u.Object, "spec", "sources")
	for _, s := range list {
		if m, ok := s.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// agentFields are the fields kept of an agent's object, besides its name and namespace.
var agentFields = [][]string{
	{"spec", "sourceRef"}, {"spec", "url"}, {"spec", "ref"}, {"spec", "suspend"},
	{"spec", "source", "repoURL"}, {"spec", "source", "targetRevision"},
	{"status", "lastAppliedRevision"}, {"status", "conditions"},
	{"status", "sync", "status"}, {"status", "sync", "revision"}, {"status", "health", "status"},
}

// keptAnnotations are the annotations an agent's row shows: the gates it names, and whether and
// why it is held.
var keptAnnotations = []string{gate.GatesAnnotation, gate.HoldAnnotation, suspend.Annotation}

// keepAgentFields is the agents' informer transform: a new object with only agentFields, the
// kept annotations, the Ready condition of status.conditions (its type, status, reason and
// message), and the repoURL and targetRevision of each of spec.sources. It is idempotent, as a
// transform must be.
func keepAgentFields(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	out := &unstructured.Unstructured{Object: map[string]any{}}
	out.SetAPIVersion(u.GetAPIVersion())
	out.SetKind(u.GetKind())
	out.SetNamespace(u.GetNamespace())
	out.SetName(u.GetName())
	out.SetUID(u.GetUID())
	out.SetResourceVersion(u.GetResourceVersion())
	annotations := map[string]string{}
	for _, k := range keptAnnotations {
		if v, ok := u.GetAnnotations()[k]; ok {
			annotations[k] = v
		}
	}
	if len(annotations) > 0 {
		out.SetAnnotations(annotations)
	}
	for _, path := range agentFields {
		if v, ok, _ := unstructured.NestedFieldNoCopy(u.Object, path...); ok {
			_ = unstructured.SetNestedField(out.Object, keepOnly(path, v), path...)
		}
	}
	list, _, _ := unstructured.NestedSlice(u.Object, "spec", "sources")
	var sources []any
	for _, src := range list {
		m, _ := src.(map[string]any)
		kept := map[string]any{}
		for _, f := range []string{"repoURL", "targetRevision"} {
			if v, ok := m[f]; ok {
				kept[f] = v
			}
		}
		sources = append(sources, kept)
	}
	if len(sources) > 0 {
		_ = unstructured.SetNestedSlice(out.Object, sources, "spec", "sources")
	}
	return out, nil
}

// keepOnly trims status.conditions to the Ready condition's type, status, reason and message.
func keepOnly(path []string, v any) any {
	if len(path) != 2 || path[1] != "conditions" {
		return runtime.DeepCopyJSONValue(v)
	}
	list, _ := v.([]any)
	var kept []any
	for _, c := range list {
		m, _ := c.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		kept = append(kept, map[string]any{"type": m["type"], "status": m["status"], "reason": m["reason"], "message": m["message"]})
	}
	return kept
}

// AgentObject is an agent's object (stripped by keepAgentFields) and its kind.
type AgentObject struct {
	Kind   string
	Object *unstructured.Unstructured
}

// AgentsOf returns the Flux Kustomizations that read a GitRepository following branch of the
// repository at repoURL, and the Argo CD Applications with a source on that branch: the objects
// that deploy an environment, of those the store's scope may list. Nil until WatchAgents ran.
func (s *Store) AgentsOf(repoURL, branch string) []AgentObject {
	if s.Agents.Kustomizations == nil || fluxwake.RepositoryKey(repoURL) == "" || branch == "" {
		return nil
	}
	key := repositoryBranch(repoURL, branch)
	// Found by index, not by name: any of these kinds' objects may start or stop deploying it, and
	// each change of one names the branches it deploys (affects.go).
	s.Agents.Kustomizations.reads.add(agentsKey(key))
	var out []AgentObject
	repos, _ := s.Agents.GitRepositories.Informer.GetIndexer().ByIndex(byDeployedBranch, key)
	for _, r := range repos {
		m, ok := r.(metav1.Object)
		if !ok {
			continue
		}
		ks, _ := s.Agents.Kustomizations.Informer.GetIndexer().ByIndex(bySourceRef, m.GetNamespace()+"/"+m.GetName())
		for _, k := range ks {
			if u, ok := k.(*unstructured.Unstructured); ok && s.Agents.Kustomizations.mayList(u.GetNamespace()) {
				out = append(out, AgentObject{Kind: "Kustomization", Object: u})
			}
		}
	}
	apps, _ := s.Agents.Applications.Informer.GetIndexer().ByIndex(byDeployedBranch, key)
	for _, a := range apps {
		if u, ok := a.(*unstructured.Unstructured); ok && s.Agents.Applications.mayList(u.GetNamespace()) {
			out = append(out, AgentObject{Kind: "Application", Object: u})
		}
	}
	return out
}
