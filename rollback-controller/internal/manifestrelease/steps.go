// Package manifestrelease reconciles ManifestReleases (RFC-0002 for any manifest set): it reads
// the desired version from its source, keeps it as a numbered snapshot, applies it, waits for
// health, runs the tests, and rolls back to the previous snapshot when any of that fails.
//
// A reconcile goes one step at a time, as the promoter's promotionstrategy does:
//
//   - observe returns a fresh observation: the release as it is now, over the progress the
//     earlier steps of its operation made (what they read and found, kept in memory), with what
//     the next decision needs and was not read yet: its source, its snapshots, and what an
//     operation would do to the live objects (rights, ownership, CRDs);
//   - decide is a pure function of that observation, returning one step: a status change, what
//     to announce, and one act, a value holding what it works on (save a snapshot, apply
//     snapshot N, look at its health, test, prune, roll back to M, ...);
//   - applyStep carries the step out: its one status write (writeStatus, the only place the
//     status is written), then its Events and metrics once that write landed, then its act, as
//     the identity the release acts as; it returns what the act found, which the progress keeps
//     for the next decision.
//
// Each reconcile carries out one step and asks for the next, so an operation of hundreds of
// objects, or one waiting for health, never holds a worker from start to end. The step that
// records an operation writes the status before it acts, so a crash at any point resumes from
// what the status records.
package manifestrelease

// One step per reconcile: Reconcile loads the release, then observe, decide and apply take one
// step, and the reconcile asks for the next.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// Reconcile converges one ManifestRelease, keyed "namespace/name".
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	l, found, err := reconcile.Load(key, r.getLive(ctx), func(mr *rollbackv1.ManifestRelease) bool { return mr.Spec.Suspend })
	if err != nil {
		return controller.Result{}, err
	}
	if !found {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		r.Metrics.Forget(ns, name)
		r.SourceWatches.Forget(key)
		r.Progress.forget(key)
		return controller.Result{}, nil
	}
	return r.takeStep(ctx, l.Next, l.Suspend)
}

// maxSteps bounds the steps of one operation, not counting the looks at its health: the
// longest, a failed upgrade rolled back, takes eleven. More means decide goes round in a circle.
const maxSteps = 24

// Delays between two steps of a release: the next step comes at once, behind the other releases
// waiting in the queue; a look at health that found objects not ready yet comes back later.
const (
	nextStep   = time.Millisecond
	healthPoll = 500 * time.Millisecond
)

// takeStep observes, decides and applies one step, then asks for the next: no reconcile holds a
// worker for a whole operation, so the other releases take their turns between its steps. The
// progress of the earlier steps is kept in Progress while the release is as the last step left
// it; an error, a restart or a status not this controller's last write starts afresh, and the
// operation the status records resumes.
func (r *Reconciler) takeStep(ctx context.Context, mr *rollbackv1.ManifestRelease, suspended suspend.State) (controller.Result, error) {
	key := mr.Namespace + "/" + mr.Name
	as, err := r.identityOf(mr)
	if err != nil {
		return controller.Result{}, err
	}
	o, err := r.observe(ctx, as, mr, suspended, r.Progress.take(key, mr))
	if err != nil {
		return r.giveUp(mr, "observe", err)
	}
	next := decide(o)
	res, err := r.applyStep(ctx, as, next)
	if err != nil {
		return r.giveUp(res.Release, next.Name, err)
	}
	if next.Done {
		return controller.Result{RequeueAfter: next.Requeue}, nil
	}
	kept := o.progress.after(next, res)
	if kept.Steps > maxSteps {
		return r.giveUp(mr, next.Name, fmt.Errorf("ManifestRelease %s took more than %d steps", key, maxSteps))
	}
	r.Progress.remember(key, kept)
	if res.Found.Awaiting {
		return controller.Result{RequeueAfter: healthPoll}, nil
	}
	return controller.Result{RequeueAfter: nextStep}, nil
}

// giveUp logs a reconcile that failed, at ERROR, and returns its error to be retried with
// backoff; a recorded operation stays, to be resumed.
func (r *Reconciler) giveUp(mr *rollbackv1.ManifestRelease, step string, err error) (controller.Result, error) {
	r.logger().Error("reconcile failed; retrying with backoff", logAttrs(mr, "step", step, "error", err)...)
	return controller.Result{}, err
}

// getLive reads a release the cache still has from the API server: the cache may not hold this
// controller's last status write yet, and acting on an older status could repeat an operation
// that ended.
func (r *Reconciler) getLive(ctx context.Context) func(namespace, name string) (*rollbackv1.ManifestRelease, error) {
	return func(namespace, name string) (*rollbackv1.ManifestRelease, error) {
		if _, err := r.Releases.ManifestReleases(namespace).Get(name); err != nil {
			return nil, err
		}
		return r.Client.RollbackV1alpha1().ManifestReleases(namespace).Get(ctx, name, metav1.GetOptions{})
	}
}

// Progress keeps, between the reconciles of each release, the progress its earlier steps made:
// the source read, the snapshot loaded, what the acts found. It lives only in this process; what
// must survive a crash is in the status.
type Progress struct {
	mu   sync.Mutex
	kept map[string]progress
}

// NewProgress keeps nothing yet.
func NewProgress() *Progress { return &Progress{kept: map[string]progress{}} }

// take hands out, once, the progress kept for key, if the release still holds the status the
// last step left; otherwise none, and the operation the status records resumes from there.
func (p *Progress) take(key string, mr *rollbackv1.ManifestRelease) progress {
	p.mu.Lock()
	kept, ok := p.kept[key]
	delete(p.kept, key)
	p.mu.Unlock()
	if !ok || kept.Left == nil || kept.Left.UID != mr.UID || !equality.Semantic.DeepEqual(kept.Left.Status, mr.Status) {
		return progress{}
	}
	return kept
}

func (p *Progress) forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.kept, key)
}

func (p *Progress) remember(key string, next progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kept[key] = next
}
