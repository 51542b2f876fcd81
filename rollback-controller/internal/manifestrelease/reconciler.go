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
// Each reconcile carries out one step and asks for the next, so an operation of hundreds of
// objects, or one waiting for health, never holds a worker from start to end. The step that
// records an operation writes the status before it acts, so a crash at any point resumes from
// what the status records.
package manifestrelease

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
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

// Reconciler reconciles ManifestReleases, one step per reconcile.
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

	// Progress keeps what the steps of each release found until its next step.
	Progress *Progress

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
		r.Progress.forget(key)
		return controller.Result{}, nil
	}
	return r.sync(ctx, l.Next, l.Suspend)
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

// sync observes, decides and applies one step, then asks for the next: no reconcile holds a
// worker for a whole operation, so the other releases take their turns between its steps. What
// the earlier steps observed and found is kept in Progress while the release is as the last step
// left it; an error, a restart or a status not this controller's last write starts afresh, and
// the operation the status records resumes.
func (r *Reconciler) sync(ctx context.Context, mr *rollbackv1.ManifestRelease, suspended suspend.State) (controller.Result, error) {
	key := mr.Namespace + "/" + mr.Name
	acting, err := r.actingFor(mr)
	if err != nil {
		return controller.Result{}, err
	}
	o := r.Progress.take(key, mr)
	if o == nil {
		o = &observation{Release: mr, Actor: acting.reviewer.User}
	}
	o.Suspend = suspended
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
	if !o.Found.Awaiting {
		o.Steps++
	}
	if o.Steps > maxSteps {
		return acting.failed(o, next.Name, fmt.Errorf("ManifestRelease %s took more than %d steps", key, maxSteps))
	}
	r.Progress.keep(key, o)
	if o.Found.Awaiting {
		return controller.Result{RequeueAfter: healthPoll}, nil
	}
	return controller.Result{RequeueAfter: nextStep}, nil
}

// Progress keeps, between the reconciles of each release, the observation its earlier steps
// built: the source read, the snapshot loaded, what the acts found. It lives only in this
// process; what must survive a crash is in the status.
type Progress struct {
	mu      sync.Mutex
	pending map[string]*observation
}

// NewProgress keeps nothing yet.
func NewProgress() *Progress { return &Progress{pending: map[string]*observation{}} }

// take hands out, once, the observation kept for key, if the release still holds the status
// the last step left; it then sees mr, with any change to its spec or metadata since.
func (p *Progress) take(key string, mr *rollbackv1.ManifestRelease) *observation {
	p.mu.Lock()
	o := p.pending[key]
	delete(p.pending, key)
	p.mu.Unlock()
	if o == nil || o.Release.UID != mr.UID || !equality.Semantic.DeepEqual(o.Release.Status, mr.Status) {
		return nil
	}
	o.Release = mr
	return o
}

func (p *Progress) forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pending, key)
}

func (p *Progress) keep(key string, o *observation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending[key] = o
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
