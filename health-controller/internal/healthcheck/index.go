package healthcheck

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sluicehq/sluice/pkg/runtime/dynamicwatch"
)

// interest is what one HealthCheck reads in one scope: named objects, and objects selected by
// label. An event on an object it does not read does not wake it.
type interest struct {
	names     map[string]struct{}
	selectors []labels.Selector
}

func (i *interest) addName(namespace, name string) {
	if i.names == nil {
		i.names = map[string]struct{}{}
	}
	i.names[objectKey(namespace, name)] = struct{}{}
}

func (i *interest) matches(u *unstructured.Unstructured) bool {
	if u == nil {
		return false
	}
	if _, ok := i.names[objectKey(u.GetNamespace(), u.GetName())]; ok {
		return true
	}
	if len(i.selectors) == 0 {
		return false
	}
	set := labels.Set(u.GetLabels())
	for _, s := range i.selectors {
		if s.Matches(set) {
			return true
		}
	}
	return false
}

func objectKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// index maps watch events to the HealthChecks they concern.
type index struct {
	mu      sync.RWMutex
	byScope map[dynamicwatch.Scope]map[string]*interest
	byOwner map[string]map[dynamicwatch.Scope]*interest
}

func newIndex() *index {
	return &index{byScope: map[dynamicwatch.Scope]map[string]*interest{}, byOwner: map[string]map[dynamicwatch.Scope]*interest{}}
}

// set replaces what owner reads.
func (x *index) set(owner string, interests map[dynamicwatch.Scope]*interest) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeLocked(owner)
	for s, in := range interests {
		if x.byScope[s] == nil {
			x.byScope[s] = map[string]*interest{}
		}
		x.byScope[s][owner] = in
	}
	x.byOwner[owner] = interests
}

func (x *index) remove(owner string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeLocked(owner)
}

func (x *index) removeLocked(owner string) {
	for s := range x.byOwner[owner] {
		delete(x.byScope[s], owner)
		if len(x.byScope[s]) == 0 {
			delete(x.byScope, s)
		}
	}
	delete(x.byOwner, owner)
}

// owners returns the HealthChecks that read the object before or after the event: an object
// that stops matching a selector changes the set as much as one that starts to.
func (x *index) owners(s dynamicwatch.Scope, old, new *unstructured.Unstructured) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var out []string
	for owner, in := range x.byScope[s] {
		if in.matches(old) || in.matches(new) {
			out = append(out, owner)
		}
	}
	return out
}
