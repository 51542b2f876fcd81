package holding

import (
	"sync"

	"github.com/sluicehq/sluice/pkg/fluxsource"
)

// followKey is the work-queue key of a source as a watched object (see Key).
func followKey(s fluxsource.Ref) string {
	return s.GroupResource.String() + "|" + s.Namespace + "/" + s.Name
}

// Followers remembers which targets follow which source, so that a source's new revision brings
// back the targets that wait for an approval of it. A target follows one source at a time.
type Followers struct {
	mu       sync.Mutex
	sourceOf map[string]string
	targets  map[string]map[string]bool
}

// NewFollowers returns an empty Followers.
func NewFollowers() *Followers {
	return &Followers{sourceOf: map[string]string{}, targets: map[string]map[string]bool{}}
}

// Follow makes target follow source, and only it. A nil Followers follows nothing.
func (f *Followers) Follow(target, source string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sourceOf[target] == source {
		return
	}
	f.unfollowLocked(target)
	f.sourceOf[target] = source
	if f.targets[source] == nil {
		f.targets[source] = map[string]bool{}
	}
	f.targets[source][target] = true
}

// Follows reports whether target follows a source.
func (f *Followers) Follows(target string) bool {
	_, ok := f.Source(target)
	return ok
}

// Source is the key of the source target follows, if it follows one.
func (f *Followers) Source(target string) (string, bool) {
	if f == nil {
		return "", false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	source, ok := f.sourceOf[target]
	return source, ok
}

// Unfollow stops target following any source.
func (f *Followers) Unfollow(target string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unfollowLocked(target)
}

func (f *Followers) unfollowLocked(target string) {
	source, ok := f.sourceOf[target]
	if !ok {
		return
	}
	delete(f.sourceOf, target)
	delete(f.targets[source], target)
	if len(f.targets[source]) == 0 {
		delete(f.targets, source)
	}
}

// Of returns the targets that follow source.
func (f *Followers) Of(source string) []string {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	keys := make([]string, 0, len(f.targets[source]))
	for k := range f.targets[source] {
		keys = append(keys, k)
	}
	return keys
}
