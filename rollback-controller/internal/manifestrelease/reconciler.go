// Package manifestrelease reconciles ManifestReleases (RFC-0002 for any manifest set): it reads
// the desired version from its source, keeps it as a numbered snapshot, applies it, waits for
// health, runs the tests, and rolls back to the previous snapshot when any of that fails.
package manifestrelease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	rollbacklisters "github.com/sluicehq/sluice/api/generated/listers/rollback/v1alpha1"
	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/apply"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/pkg/snapshot"
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
	suspended := l.Suspend.Suspended
	if l.Cached.DeletionTimestamp != nil {
		return r.finalize(ctx, l.Cached, suspended)
	}
	mr, err := r.holdForDeletion(ctx, l.Cached)
	if err != nil {
		return controller.Result{}, err
	}
	// The Suspended condition, set or removed, lands first; an unchanged status writes nothing.
	mr, _, err = releaseStatus.Change(ctx, r.Client.RollbackV1alpha1().ManifestReleases(mr.Namespace), mr, func(mr *rollbackv1.ManifestRelease) {
		wasSuspended := conditions.Get(mr.Status.Conditions, conditions.Suspended) != nil
		l.ReportSuspend(&mr.Status.Conditions)
		keepHeldAcrossSuspend(&mr.Status, mr.Generation, suspended || wasSuspended)
		if suspended {
			mr.Status.ObservedGeneration = mr.Generation
		}
	})
	if err != nil || suspended {
		return controller.Result{}, err
	}
	if r, err = r.actingFor(mr); err != nil {
		return controller.Result{}, err
	}
	if mr.Status.Operation != nil {
		return r.resume(ctx, mr)
	}
	if err := validateSpec(mr); err != nil {
		return r.stall(ctx, mr, ReasonInvalidSpec, err.Error(), 0)
	}
	if req, ok := rollbackRequest(mr); ok {
		return r.manualRollback(ctx, mr, req)
	}
	if _, asked := mr.Annotations[rollbackv1.RollbackToAnnotation]; !asked && mr.Status.LastHandledRollback != "" {
		if mr, err = r.writeStatus(ctx, mr, func(st *rollbackv1.ManifestReleaseStatus, _ int64) { st.LastHandledRollback = "" }); err != nil {
			return controller.Result{}, err
		}
	}
	res, err := r.sync(ctx, mr)
	if err != nil {
		return res, err
	}
	return res, r.markHandled(ctx, mr)
}

// keepHeldAcrossSuspend keeps a failed version held when the only spec change since it failed
// is suspending or resuming the release: spec.suspend bumps the generation, which otherwise
// counts as a change of spec that tries the version again.
func keepHeldAcrossSuspend(st *rollbackv1.ManifestReleaseStatus, generation int64, suspending bool) {
	if suspending && st.LastAttemptFailed && st.LastAttemptedGeneration != 0 && st.LastAttemptedGeneration == st.ObservedGeneration {
		st.LastAttemptedGeneration = generation
	}
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

// markHandled records the requestedAt annotation acted on, so `kubectl wait` or a test can see
// that a requested refresh happened.
func (r *Reconciler) markHandled(ctx context.Context, mr *rollbackv1.ManifestRelease) error {
	requested, ok := mr.Annotations[rollbackv1.RequestedAtAnnotation]
	if !ok || requested == mr.Status.LastHandledReconcileAt {
		return nil
	}
	_, err := r.writeStatus(ctx, mr, func(st *rollbackv1.ManifestReleaseStatus, _ int64) { st.LastHandledReconcileAt = requested })
	return err
}

// sync reads the source and upgrades when it gives manifests that are neither deployed nor held.
func (r *Reconciler) sync(ctx context.Context, mr *rollbackv1.ManifestRelease) (controller.Result, error) {
	interval := durationOr(mr.Spec.Interval, 5*time.Minute)
	fetched, err := r.Sources.Fetch(ctx, mr)
	var srcErr *SourceError
	errors.As(err, &srcErr)
	r.awaitSource(mr, srcErr)
	if srcErr != nil {
		return r.sourceFailed(ctx, mr, srcErr, interval)
	}
	if err != nil {
		return controller.Result{}, err
	}
	digest, err := snapshot.Digest(fetched.Files, r.Snapshots.Options)
	if err != nil {
		return r.stall(ctx, mr, ReasonInvalidManifests, err.Error(), interval)
	}
	if fetched.Version == "" {
		fetched.Version = shortDigest(digest)
	}
	st := mr.Status
	switch {
	case digest == st.DeployedDigest:
		return r.deployed(ctx, mr, fetched, interval)
	case st.LastAttemptFailed && digest == st.LastAttemptedDigest && st.LastAttemptedGeneration == mr.Generation:
		return r.held(ctx, mr, interval)
	}
	return r.upgrade(ctx, mr, fetched, digest)
}

// awaitSource watches for the missing source ConfigMap of mr, as the identity mr acts as, or
// ends that watch once the source is read or fails otherwise.
func (r *Reconciler) awaitSource(mr *rollbackv1.ManifestRelease, srcErr *SourceError) {
	key := mr.Namespace + "/" + mr.Name
	if srcErr == nil || srcErr.MissingConfigMap == "" {
		r.SourceWatches.Forget(key)
		return
	}
	r.SourceWatches.Await(key, r.Sources.Kube.CoreV1(), r.Identities.ServiceAccountOf(mr), mr.Namespace, srcErr.MissingConfigMap)
}

func validateSpec(mr *rollbackv1.ManifestRelease) error {
	if t := mr.Spec.Test; t != nil {
		if err := manifest.ValidateFilters(filters(t)); err != nil {
			return fmt.Errorf("spec.test.%v", err)
		}
	}
	return snapshot.ValidateMeta(snapshot.Meta{Release: mr.Name, Number: 1})
}

// deployed reports a release whose source gives what runs. A version held back before is no
// longer what the source gives, so it is released.
func (r *Reconciler) deployed(ctx context.Context, mr *rollbackv1.ManifestRelease, fetched Fetched, interval time.Duration) (controller.Result, error) {
	if res, failed, err := r.correctDrift(ctx, mr, fetched); failed || err != nil {
		return res, err
	}
	st := mr.Status
	message := describe(st.DeployedVersion, st.UpgradeNumber) + " is deployed"
	ready := conditions.Get(st.Conditions, conditions.Ready)
	if ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == mr.Generation && !stalledOrReconciling(st) && !st.LastAttemptFailed {
		return controller.Result{RequeueAfter: interval}, nil
	}
	_, err := r.writeStatus(ctx, mr, func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
		st.LastAttemptFailed = false
		conditions.MarkReady(&st.Conditions, gen, ReasonDeployed, message)
	})
	return controller.Result{RequeueAfter: interval}, err
}

// correctDrift applies the deployed version again, as Flux does on each interval: objects
// deleted or changed out of band come back as the manifests say. The source gives exactly the
// deployed manifests here (same digest).
func (r *Reconciler) correctDrift(ctx context.Context, mr *rollbackv1.ManifestRelease, fetched Fetched) (controller.Result, bool, error) {
	objs, err := r.prepare(mr, fetched.Files)
	if err == nil {
		if err = r.Applier.Apply(ctx, objs, ownerLabels(mr, false)); err != nil && !refusedByServer(err) {
			return controller.Result{}, true, err
		}
	}
	if err == nil {
		return controller.Result{}, false, nil
	}
	message := fmt.Sprintf("re-applying %s to correct drift failed: %v", describe(mr.Status.DeployedVersion, mr.Status.UpgradeNumber), err)
	res, err := r.stall(ctx, mr, ReasonApplyFailed, message, retryDelay(mr, ReasonApplyFailed, r.Clock.Now()))
	return res, true, err
}

// held keeps a failed version from being tried again until its source changes.
func (r *Reconciler) held(ctx context.Context, mr *rollbackv1.ManifestRelease, interval time.Duration) (controller.Result, error) {
	if mr.Status.ObservedGeneration != mr.Generation {
		_, err := r.writeStatus(ctx, mr, func(*rollbackv1.ManifestReleaseStatus, int64) {})
		return controller.Result{RequeueAfter: interval}, err
	}
	return controller.Result{RequeueAfter: interval}, nil
}

func stalledOrReconciling(st rollbackv1.ManifestReleaseStatus) bool {
	return conditions.Get(st.Conditions, conditions.Stalled) != nil || conditions.Get(st.Conditions, conditions.Reconciling) != nil
}

// stall records a problem a person must fix. recheck > 0 looks again after it.
func (r *Reconciler) stall(ctx context.Context, mr *rollbackv1.ManifestRelease, reason, message string, recheck time.Duration) (controller.Result, error) {
	message = conditionMessage(message)
	if c := conditions.Get(mr.Status.Conditions, conditions.Stalled); c == nil || c.Message != message || c.ObservedGeneration != mr.Generation {
		if _, err := r.writeStatus(ctx, mr, func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
			conditions.MarkStalled(&st.Conditions, gen, reason, message)
		}, r.event(corev1.EventTypeWarning, reason, message)); err != nil {
			return controller.Result{}, err
		}
	}
	return controller.Result{RequeueAfter: recheck}, nil
}

func (r *Reconciler) sourceFailed(ctx context.Context, mr *rollbackv1.ManifestRelease, err *SourceError, interval time.Duration) (controller.Result, error) {
	if err.NeedsPerson {
		recheck := interval
		if err.Reason == ReasonForbidden || err.Reason == ReasonSourceNotFound {
			// RBAC is not watched, nor every kind of source: look again soon, then less often.
			recheck = retryDelay(mr, err.Reason, r.Clock.Now())
		}
		return r.stall(ctx, mr, err.Reason, err.Message, recheck)
	}
	message := conditionMessage(err.Message)
	if c := conditions.Get(mr.Status.Conditions, conditions.Ready); c == nil || c.Message != message {
		if _, werr := r.writeStatus(ctx, mr, func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
			conditions.MarkNotReady(&st.Conditions, gen, err.Reason, message)
		}); werr != nil {
			return controller.Result{}, werr
		}
	}
	return controller.Result{RequeueAfter: min(interval, time.Minute)}, nil
}

// event announces an Event on the release as stored, and logs it: Normal ones (upgrades, test
// results, rollbacks) at INFO, Warnings (failures) at ERROR, with the release, the version and
// the snapshot number.
func (r *Reconciler) event(eventType, reason, message string) func(*rollbackv1.ManifestRelease) {
	return func(mr *rollbackv1.ManifestRelease) {
		r.Recorder.Event(mr, eventType, reason, message)
		if r.Log == nil {
			return
		}
		attrs := []any{"release", mr.Namespace + "/" + mr.Name, "reason", reason}
		if op := mr.Status.Operation; op != nil {
			attrs = append(attrs, "action", op.Action, "version", op.Version, "snapshot", op.Number, "from", op.From)
		} else {
			attrs = append(attrs, "version", mr.Status.DeployedVersion, "snapshot", mr.Status.UpgradeNumber)
		}
		if eventType == corev1.EventTypeWarning {
			r.Log.Error(message, attrs...)
			return
		}
		r.Log.Info(message, attrs...)
	}
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

// interval is spec.interval, or its default.
func interval(mr *rollbackv1.ManifestRelease) time.Duration {
	return durationOr(mr.Spec.Interval, 5*time.Minute)
}

func durationOr(d *metav1.Duration, fallback time.Duration) time.Duration {
	if d == nil || d.Duration <= 0 {
		return fallback
	}
	return d.Duration
}
