package manifestrelease

// One step per reconcile: Reconcile loads the release, then observe, decide and apply take one
// step, and the reconcile asks for the next.

import (
	"context"
	"fmt"
	"time"

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
	res, err := r.apply(ctx, as, next)
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
