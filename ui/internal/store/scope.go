package store

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Scope is what one person may read. The informers hold what the UI's ServiceAccount may read;
// a store scoped with For shows a person only the part of it they may read themselves, as
// kubectl would: a list needs list on the kind in the namespace, one object get on it.
type Scope interface {
	MayList(resource schema.GroupResource, namespace string) bool
	MayGet(resource schema.GroupResource, namespace, name string) bool
}

type everything struct{}

func (everything) MayList(schema.GroupResource, string) bool        { return true }
func (everything) MayGet(schema.GroupResource, string, string) bool { return true }

type nothing struct{}

func (nothing) MayList(schema.GroupResource, string) bool        { return false }
func (nothing) MayGet(schema.GroupResource, string, string) bool { return false }

// Everything is the scope of one who reads with their own credentials: local mode, where the
// informers read with the person's kubeconfig. Nothing shows nothing.
var (
	Everything Scope = everything{}
	Nothing    Scope = nothing{}
)

// For returns the store as scope sees it. Its answers are remembered for the life of the
// returned store (one page), so a page that lists a thousand objects in a hundred namespaces
// asks a hundred times; its change subscriptions ask scope itself every time (a stream lasts
// as long as a page is open, and a right revoked meanwhile must be seen).
func (s *Store) For(scope Scope) *Store {
	scoped := *s
	scoped.scope = scope
	scoped.reads = &Reads{}
	memo := &memoScope{Scope: scope, answers: map[memoKey]bool{}}
	for _, k := range []**Kind{&scoped.Strategies, &scoped.PullRequests, &scoped.CommitStatuses, &scoped.Gates, &scoped.HealthChecks,
		&scoped.RevertCommits, &scoped.RollbackPolicies, &scoped.ManifestReleases, &scoped.Repositories, &scoped.Providers} {
		*k = (*k).withScope(memo, scoped.reads)
	}
	for _, k := range []**Kind{&scoped.Agents.Kustomizations, &scoped.Agents.GitRepositories, &scoped.Agents.Applications} {
		*k = (*k).withScope(memo, scoped.reads)
	}
	scoped.Targets = make([]*Kind, len(s.Targets))
	for i, k := range s.Targets {
		scoped.Targets[i] = k.withScope(memo, scoped.reads)
	}
	return &scoped
}

func (k *Kind) withScope(scope Scope, reads *Reads) *Kind {
	if k == nil {
		return nil
	}
	scoped := *k
	scoped.scope = scope
	scoped.reads = reads
	return &scoped
}

// mayList reports whether the kind's objects in namespace are shown; the unscoped store shows
// everything.
func (k *Kind) mayList(namespace string) bool {
	return k.scope == nil || k.scope.MayList(k.Resource, namespace)
}

func (k *Kind) mayGet(namespace, name string) bool {
	return k.scope == nil || k.scope.MayGet(k.Resource, namespace, name)
}

type memoKey struct {
	resource        schema.GroupResource
	namespace, name string
	list            bool
}

// memoScope remembers a scope's answers for one page.
type memoScope struct {
	Scope
	mu      sync.Mutex
	answers map[memoKey]bool
}

func (m *memoScope) MayList(resource schema.GroupResource, namespace string) bool {
	return m.remember(memoKey{resource: resource, namespace: namespace, list: true}, func() bool {
		return m.Scope.MayList(resource, namespace)
	})
}

func (m *memoScope) MayGet(resource schema.GroupResource, namespace, name string) bool {
	return m.remember(memoKey{resource: resource, namespace: namespace, name: name}, func() bool {
		return m.Scope.MayGet(resource, namespace, name)
	})
}

// askAhead is how many reviews a page asks at once when it lists a kind in many namespaces: a
// person never seen before costs one review per namespace, and asked in turn they add up.
const askAhead = 8

// listsIn asks, askAhead at a time, whether the scope may list resource in each of namespaces
// it has not answered yet, so that the page's filter then finds every answer remembered.
func (m *memoScope) listsIn(resource schema.GroupResource, namespaces map[string]struct{}) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, askAhead)
	for ns := range namespaces {
		m.mu.Lock()
		_, known := m.answers[memoKey{resource: resource, namespace: ns, list: true}]
		m.mu.Unlock()
		if known {
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			m.MayList(resource, ns)
		})
	}
	wg.Wait()
}

func (m *memoScope) remember(key memoKey, ask func() bool) bool {
	m.mu.Lock()
	ok, known := m.answers[key]
	m.mu.Unlock()
	if known {
		return ok
	}
	ok = ask()
	m.mu.Lock()
	m.answers[key] = ok
	m.mu.Unlock()
	return ok
}
