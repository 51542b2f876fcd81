// Package manifestrelease reconciles ManifestReleases (RFC-0002 for any manifest set): it reads
// the desired version from its source, keeps it as a numbered snapshot, applies it, waits for
// health, runs the tests, and rolls back to the previous snapshot when any of that fails.
//
// A reconcile goes one step at a time, as the promoter's promotionstrategy does:
//
//   - observe reads what the next decision needs into one observation: the release, its source,
//     its snapshots, and what an operation would do to the live objects (rights, ownership, CRDs);
//   - decide is a pure function of that observation, returning one step: hold for deletion, save
//     a snapshot, record an upgrade, apply snapshot N, test, prune, roll back to M, report, stall;
//   - apply carries the step out: its one status write (writeStatus, the only place the status is
//     written), then its Events and metrics once that write landed, then its act, whose findings
//     the next decision reads.
//
// An operation runs within one reconcile. The step that records it writes the status before it
// acts, so a crash at any point resumes from what the status records.
package manifestrelease

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	rollbacklisters "github.com/sluicehq/sluice/api/generated/listers/rollback/v1alpha1"
	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/rollback-controller/internal/apply"
)

// Reconciler reconciles ManifestReleases. An operation (an upgrade with its tests, or a
// rollback) runs within one reconcile, holding one worker until it ends.
type Reconciler struct {
	Releases  rollbacklisters.ManifestReleaseLister
	Client    sluice.Interface
	Kube      kubernetes.Interface
	Sources   *Sources
	Snapshots *snapshot.Store
	Applier   *apply.Applier
	Recorder  record.EventRecorder
	Metrics   *Metrics
	// StalledRecheck is how soon a release blocked on something a person must do in the cluster
	// (a CRD that still has objects) is looked at again.
	StalledRecheck time.Duration
	// Clock is the time: the manager's in a process, a fake one in tests.
	Clock clock.PassiveClock
	// Identities impersonates the ServiceAccount each release acts as; nil lets releases that
	// name none act with the controller's own rights.
	Identities *Identities

	// SourceWatches wakes a release waiting for its source ConfigMap when it is created; nil
	// leaves such a release to its backoff.
	SourceWatches *SourceWatches

	// Log records upgrades, test results and rollbacks (INFO) and failures (ERROR).
	Log *slog.Logger

	// reviewer asks what the identity a release acts as may do (set by actingFor).
	reviewer apply.Reviewer
}

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
		return controller.Result{}, nil
	}
	return r.sync(ctx, l.Next, l.Suspend)
}

// maxSteps bounds the steps of one reconcile; the longest, a failed upgrade rolled back, takes
// nine.
const maxSteps = 16

// sync observes, decides and applies, one step after another, until a step ends the reconcile.
// An operation (an upgrade with its tests, or a rollback) runs within one reconcile, holding one
// worker until it ends; an error leaves it recorded, and the next reconcile resumes it.
func (r *Reconciler) sync(ctx context.Context, mr *rollbackv1.ManifestRelease, suspended suspend.State) (controller.Result, error) {
	acting, err := r.actingFor(mr)
	if err != nil {
		return controller.Result{}, err
	}
	o := &observation{Release: mr, Suspend: suspended, Actor: acting.reviewer.User}
	for range maxSteps {
		if err := acting.observe(ctx, o); err != nil {
			return acting.failed(o, "observe", err)
		}
		next := decide(o)
		if err := acting.apply(ctx, o, next); err != nil {
			return acting.failed(o, next.Name, err)
		}
		if next.Done {
			return controller.Result{RequeueAfter: next.Requeue}, nil
		}
	}
	return controller.Result{}, fmt.Errorf("ManifestRelease %s/%s took more than %d steps in one reconcile", mr.Namespace, mr.Name, maxSteps)
}

// failed logs a reconcile that failed, at ERROR, and returns its error to be retried with
// backoff; a recorded operation stays, to be resumed.
func (r *Reconciler) failed(o *observation, step string, err error) (controller.Result, error) {
	r.logger().Error("reconcile failed; retrying with backoff", logAttrs(o.Release, "step", step, "error", err)...)
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

func validateSpec(mr *rollbackv1.ManifestRelease) error {
	if t := mr.Spec.Test; t != nil {
		if err := manifest.ValidateFilters(filters(t)); err != nil {
			return fmt.Errorf("spec.test.%v", err)
		}
	}
	return snapshot.ValidateMeta(snapshot.Meta{Release: mr.Name, Number: 1})
}

// rollbackRequest returns a rollback-to annotation value not yet acted on.
func rollbackRequest(mr *rollbackv1.ManifestRelease) (string, bool) {
	value, ok := mr.Annotations[rollbackv1.RollbackToAnnotation]
	return value, ok && value != mr.Status.LastHandledRollback
}

// ownerLabels mark the objects of mr; tests adds the test label.
func ownerLabels(mr *rollbackv1.ManifestRelease, tests bool) map[string]string {
	labels := map[string]string{rollbackv1.ReleaseNameLabel: mr.Name, rollbackv1.ReleaseNamespaceLabel: mr.Namespace}
	if tests {
		labels[rollbackv1.TestLabel] = "true"
	}
	return labels
}

// prepare parses files into objects in apply order, namespaced into the target namespace.
func (r *Reconciler) prepare(mr *rollbackv1.ManifestRelease, files []snapshot.File) ([]*unstructured.Unstructured, error) {
	raw := make(map[string][]byte, len(files))
	var all []*unstructured.Unstructured
	for _, f := range files {
		raw[f.Name] = f.Data
		objs, err := manifest.ParseFile(f.Name, f.Data)
		if err != nil {
			return nil, err
		}
		all = append(all, objs...)
	}
	return manifest.Prepare(raw, manifest.ScopeFrom(r.Applier.Mapper, all), targetNamespace(mr))
}

func targetNamespace(mr *rollbackv1.ManifestRelease) string {
	if mr.Spec.TargetNamespace != "" {
		return mr.Spec.TargetNamespace
	}
	return mr.Namespace
}
