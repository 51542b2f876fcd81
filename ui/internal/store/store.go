// Package store holds what the UI shows: one informer per Sluice kind, and a metadata-only one
// per Flux and Argo CD kind that gates hold (TargetKinds), each started under
// crdwatch.Kinds once its CRD is installed, so a kind whose chart is missing is a quiet "not
// installed" rather than an error. Every change is told to Changes, which the web server pushes
// to browsers. Each kind's reading lives in a file of its own, so a field added to a kind later
// is one small edit.
package store

import (
	"log/slog"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	"github.com/sluicehq/sluice/pkg/runtime/crdwatch"
)

// Store is every kind the UI reads, and the changes to them.
type Store struct {
	Kinds   *crdwatch.Kinds
	Changes *Hub

	Strategies       *Kind
	PullRequests     *Kind
	CommitStatuses   *Kind
	Gates            *Kind
	HealthChecks     *Kind
	RevertCommits    *Kind
	RollbackPolicies *Kind
	ManifestReleases *Kind
	Repositories     *Kind
	Providers        *Kind
	// Targets are the Flux and Argo CD kinds gates hold, by TargetKinds: metadata only.
	Targets []*Kind

	// scope is what this store shows (For; scope.go); nil, everything.
	scope Scope
	// reads collects the keys of what this store was read for (For: one page); nil, none.
	reads *Reads
	// Agents deploy the environments: their status, with only the fields shown (WatchAgents).
	Agents Agents
	// Activity is the Events about Sluice's kinds, once WatchEvents has added them (events.go).
	Activity *Activity
}

// Kind is one resource's informer and what the UI calls it.
type Kind struct {
	Resource schema.GroupResource
	// Name is the kind's name in the UI and in change events, such as "PromotionStrategy".
	Name     string
	Informer cache.SharedIndexInformer
	kinds    *crdwatch.Kinds
	// scope is what this Kind shows (Store.For); nil, everything.
	scope Scope
	// reads collects the keys of this Kind's reads (Store.For); nil, none.
	reads *Reads
}

// Installed reports whether the kind's CRD is installed and its cache synced.
func (k *Kind) Installed() bool { return k.kinds.Synced(k.Resource) }

// Get returns the object namespace/name, or nil, also when the scope may not get it.
func (k *Kind) Get(namespace, name string) any {
	k.reads.add(KeyOf(k.Name, namespace, name))
	if !k.mayGet(namespace, name) {
		return nil
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, ok, err := k.Informer.GetIndexer().GetByKey(key)
	if err != nil || !ok {
		return nil
	}
	return obj
}

// InNamespace returns every object of namespace, or none when the scope may not list them.
func (k *Kind) InNamespace(namespace string) []any {
	k.reads.add(KeyOf(k.Name, namespace, ""))
	if !k.mayList(namespace) {
		return nil
	}
	objs, err := k.Informer.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil
	}
	return objs
}

// New builds the informers of every kind, watching namespace (empty: all).
func New(client sluice.Interface, meta metadata.Interface, namespace string) (*Store, error) {
	kinds, err := crdwatch.NewKinds(meta)
	if err != nil {
		return nil, err
	}
	s := &Store{Kinds: kinds, Changes: NewHub()}
	add := func(gr schema.GroupResource, name string, newInformer func(sluice.Interface, string, cache.Indexers) cache.SharedIndexInformer) *Kind {
		k := &Kind{Resource: gr, Name: name, kinds: kinds,
			Informer: newInformer(client, namespace, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})}
		kinds.Add(gr, k.Informer)
		return k
	}
	s.Strategies = add(strategiesResource, "PromotionStrategy", newStrategyInformer)
	s.PullRequests = add(pullRequestsResource, "PullRequest", newPullRequestInformer)
	s.CommitStatuses = add(commitStatusesResource, "CommitStatus", newCommitStatusInformer)
	s.Gates = add(gatesResource, "Gate", newGateInformer)
	s.HealthChecks = add(healthChecksResource, "HealthCheck", newHealthCheckInformer)
	s.RevertCommits = add(revertCommitsResource, "RevertCommit", newRevertCommitInformer)
	s.RollbackPolicies = add(rollbackPoliciesResource, "RollbackPolicy", newRollbackPolicyInformer)
	s.ManifestReleases = add(manifestReleasesResource, "ManifestRelease", newManifestReleaseInformer)
	s.Repositories = add(repositoriesResource, "ScmRepository", newRepositoryInformer)
	s.Providers = add(providersResource, "ScmProvider", newProviderInformer)
	for _, t := range TargetKinds {
		k := &Kind{Resource: t.Resource.GroupResource(), Name: t.Kind, kinds: kinds, Informer: newTargetInformer(meta, t.Resource, namespace)}
		kinds.Add(k.Resource, k.Informer)
		s.Targets = append(s.Targets, k)
	}
	for _, k := range s.All() {
		name := k.Name
		notify := func(obj any) { s.Changes.NotifyObject(name, namespaceOf(obj), nameOf(obj)) }
		if _, err := k.Informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: notify, UpdateFunc: func(_, obj any) { notify(obj) }, DeleteFunc: notify,
		}); err != nil {
			return nil, err
		}
	}
	// A target's change concerns the pages of the gates it referenced and references.
	for _, k := range s.Targets {
		if _, err := k.Informer.AddEventHandler(affecting(s.Changes, k.Name, gateTargetKeys)); err != nil {
			return nil, err
		}
	}
	// A CRD installed or removed changes what every page can show.
	kinds.OnChange(func() { s.Changes.Notify(AnyKind, "") })
	return s, nil
}

// All lists every kind.
func (s *Store) All() []*Kind {
	return []*Kind{s.Strategies, s.PullRequests, s.CommitStatuses, s.Gates, s.HealthChecks,
		s.RevertCommits, s.RollbackPolicies, s.ManifestReleases, s.Repositories, s.Providers}
}

// Log makes the store say once which CRDs are missing, and which chart installs them.
func (s *Store) Log(log *slog.Logger) {
	s.Kinds.Log(log, func(missing []schema.GroupResource) string {
		names := make([]string, 0, len(missing))
		for _, gr := range missing {
			name := gr.String()
			if i := slices.IndexFunc(TargetKinds, func(t TargetKind) bool { return t.Resource.GroupResource() == gr }); i >= 0 {
				name += " (" + TargetKinds[i].Project + ")"
			}
			names = append(names, name)
		}
		slices.Sort(names)
		return strings.Join(names, ", ") + " (their pages show \"not installed\" until the charts or projects that own them are installed)"
	})
}
