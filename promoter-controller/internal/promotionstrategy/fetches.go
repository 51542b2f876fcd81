package promotionstrategy

import (
	"sync"
	"time"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
)

// Fetches decides when a strategy's reconcile fetches its repository, so that one event costs
// one fetch. Most reconciles follow the promoter's own writes (its PullRequests' status, its own
// status, a CommitStatus or a Gate): git has not moved for them, or moved by the promoter's own
// push, which the shared git cache already holds. A reconcile fetches when something outside
// may have moved git:
//   - the strategy's first reconcile in this process, or after its spec or repository URL changed;
//   - a new refresh annotation (a hydrator's CI, or a webhook received by a standby replica);
//   - a key enqueued through Waking (a webhook received by this process);
//   - the fallback poll: spec.interval since the last fetch;
//   - a PullRequest reported merged that the cache does not hold (merged on the SCM): see
//     observe.
//
// The zero value is ready to use; a nil *Fetches fetches on every reconcile.
type Fetches struct {
	mu      sync.Mutex
	fetched map[string]fetchMark
	woken   map[string]bool
}

// fetchMark is the last fetch a strategy made: when it started, from which URL, for which spec.
type fetchMark struct {
	at         time.Time
	url        string
	generation int64
	// refresh is the refresh annotation the fetch was made for: a reconcile that failed before
	// recording it as handled (a conflict) does not fetch for it again.
	refresh string
}

// Waking returns q, except that each key enqueued through it fetches on its next reconcile.
func (f *Fetches) Waking(q handler.Enqueuer) handler.Enqueuer {
	return wakingQueue{f: f, q: q}
}

type wakingQueue struct {
	f *Fetches
	q handler.Enqueuer
}

func (w wakingQueue) Enqueue(key string) {
	w.f.mu.Lock()
	if w.f.woken == nil {
		w.f.woken = map[string]bool{}
	}
	w.f.woken[key] = true
	w.f.mu.Unlock()
	w.q.Enqueue(key)
}

// due reports whether the reconcile of ps, whose repository is at url, must fetch first. When
// it must, it forgets the wake-up: one that arrives during the fetch asks for another.
func (f *Fetches) due(ps *promoterv1alpha1.PromotionStrategy, url string, now time.Time) bool {
	if f == nil {
		return true
	}
	key := ps.Namespace + "/" + ps.Name
	f.mu.Lock()
	defer f.mu.Unlock()
	mark, fetched := f.fetched[key]
	refresh := ps.Annotations[promoterv1alpha1.RefreshAnnotation]
	due := !fetched || f.woken[key] || mark.url != url || mark.generation != ps.Generation ||
		(refresh != "" && refresh != ps.Status.LastHandledRefresh && refresh != mark.refresh) ||
		!now.Before(mark.at.Add(pollInterval(ps)))
	if due {
		delete(f.woken, key)
	}
	return due
}

// done records a fetch of ps's repository at url that started at start and succeeded.
func (f *Fetches) done(ps *promoterv1alpha1.PromotionStrategy, url string, start time.Time) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fetched == nil {
		f.fetched = map[string]fetchMark{}
	}
	f.fetched[ps.Namespace+"/"+ps.Name] = fetchMark{at: start, url: url, generation: ps.Generation,
		refresh: ps.Annotations[promoterv1alpha1.RefreshAnnotation]}
}

// Forget drops what is known of the strategy key, once it is deleted.
func (f *Fetches) Forget(key string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.fetched, key)
	delete(f.woken, key)
}
