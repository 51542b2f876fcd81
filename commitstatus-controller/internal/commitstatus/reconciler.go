// Package commitstatus mirrors CommitStatus objects to their SCM.
//
// A CommitStatus is sent only when the state it asks for differs from the state last synced. The
// digest of that state (endpoint, repository, SHA, name, phase, description, URL) is kept in
// status.syncedDigest, so the same spec is never sent twice, also across restarts. Permanent
// errors mark the object Stalled and are not retried with the same inputs; rate-limited calls are
// requeued after the SCM's reset time; other errors are retried with backoff.
package commitstatus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	commitstatuslisters "github.com/sluicehq/sluice/api/generated/listers/commitstatus/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/pkg/text"
)

// FieldManager writes CommitStatus status.
const FieldManager = "commitstatus-controller"

// Defaults of the Reconciler's tunables.
const (
	DefaultRecheckInterval = time.Minute
	DefaultCallTimeout     = 30 * time.Second
	// defaultRateLimitWait is used when a rate-limited error does not say how long to wait.
	defaultRateLimitWait = 30 * time.Second
)

// Reconciler syncs one CommitStatus at a time.
type Reconciler struct {
	Statuses commitstatuslisters.CommitStatusLister
	Client   sluice.Interface
	Resolver *resolve.Resolver
	Recorder record.EventRecorder
	Metrics  *Metrics
	Log      *slog.Logger

	// RecheckInterval is how often a CommitStatus stalled on something the controller does not
	// watch (a Secret, or the SCM's answer) is looked at again. A look costs no SCM call unless the
	// object or the ScmProvider's credentials changed.
	RecheckInterval time.Duration
	// CallTimeout bounds one SCM call, waits for the shared rate limiter included.
	CallTimeout time.Duration
	// Clock is read for status.lastSyncTime; nil means the real clock.
	Clock clock.PassiveClock

	memo *memo
}

// New returns a Reconciler; set the exported fields before the first Reconcile.
func New() *Reconciler { return &Reconciler{memo: newMemo()} }

func (r *Reconciler) now() time.Time {
	if r.Clock != nil {
		return r.Clock.Now()
	}
	return time.Now()
}

func (r *Reconciler) get(namespace, name string) (*commitstatusv1alpha1.CommitStatus, error) {
	return r.Statuses.CommitStatuses(namespace).Get(name)
}

func (r *Reconciler) recheck() time.Duration {
	if r.RecheckInterval > 0 {
		return r.RecheckInterval
	}
	return DefaultRecheckInterval
}

// Reconcile syncs the CommitStatus named by key ("namespace/name").
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	if r.memo == nil {
		r.memo = newMemo()
	}
	l, found, err := reconcile.Load(key, r.get, func(cs *commitstatusv1alpha1.CommitStatus) bool { return cs.Spec.Suspend })
	if !found {
		if err == nil {
			r.memo.forget(key)
		}
		return controller.Result{}, err
	}
	cs, next := l.Cached, l.Next
	if cs.Labels[commitstatusv1alpha1.ImportedLabel] == "true" {
		// Imported from the SCM (internal/scmimport): the SCM already holds it, and sending it
		// back would make this controller the author of another system's verdict.
		r.count(OutcomeImported)
		return controller.Result{}, nil
	}
	gen := cs.Generation
	next.Status.ObservedGeneration = gen
	next.Status.ShortSHA = commitstatusv1alpha1.ShortSHA(cs.Spec.SHA)
	if l.ReportSuspend(&next.Status.Conditions) {
		target, _ := r.Resolver.Locate(cs)
		return r.suspended(ctx, cs, next, target, l.Suspend)
	}

	target, rerr := r.Resolver.Resolve(ctx, cs)
	if rerr != nil {
		return r.unresolved(ctx, cs, next, rerr)
	}
	if target.Suspended != nil {
		suspend.Report(&next.Status.Conditions, gen, *target.Suspended)
		return r.suspended(ctx, cs, next, target, *target.Suspended)
	}
	if target.InCluster {
		conditions.MarkReady(&next.Status.Conditions, gen, ReasonInCluster, fmt.Sprintf(
			"ScmProvider %q is of type %s, which has no SCM API: this object is the commit status, and promotions read it from the cluster; nothing is sent",
			target.ProviderKey, target.ProviderType))
		r.count(OutcomeInCluster)
		_, err := r.write(ctx, cs, next)
		return controller.Result{}, err
	}
	return r.sync(ctx, key, cs, next, target)
}

// sync sends the desired state unless the SCM already holds it.
func (r *Reconciler) sync(ctx context.Context, key string, cs, next *commitstatusv1alpha1.CommitStatus, target *resolve.Target) (controller.Result, error) {
	gen := cs.Generation
	desired := DesiredFor(cs, target)
	digest := desired.Digest()
	if cs.Status.SyncedDigest != digest {
		if sent, ok := r.memo.lastSent(key); ok && sent.digest == digest {
			// Sent by this process, but the status write was lost or the cache is behind.
			applySent(&next.Status, sent)
		}
	}
	if next.Status.SyncedDigest == digest {
		conditions.MarkReady(&next.Status.Conditions, gen, ReasonSynced, syncedMessage(desired, target))
		r.count(OutcomeUnchanged)
		_, err := r.write(ctx, cs, next)
		return controller.Result{}, err
	}

	inputs := digest + " " + target.CredentialsVersion
	if r.memo.failedBefore(key, inputs, cs.ResourceVersion) {
		// This exact call was refused for good; the status already says why.
		r.count(OutcomeStalled)
		return controller.Result{RequeueAfter: r.recheck()}, nil
	}

	status := scm.CommitStatus{
		SHA:         cs.Spec.SHA,
		Name:        cs.Spec.Name,
		State:       scm.StatusState(cs.Spec.Phase),
		Description: cs.Spec.Description,
		TargetURL:   cs.Spec.URL,
	}
	if cs.Status.SyncedSHA == cs.Spec.SHA {
		// Lets a GitHub App update its check run instead of starting another.
		status.ProviderID = cs.Status.ProviderID
	}
	callCtx := ctx
	if r.CallTimeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, r.CallTimeout)
		defer cancel()
	}
	out, err := target.Provider.SetCommitStatus(callCtx, target.Repository, status)
	if err != nil {
		return r.failed(ctx, key, cs, next, target, inputs, err)
	}

	sent := sentRecord{digest: digest, phase: string(cs.Spec.Phase), sha: cs.Spec.SHA, providerID: out.ProviderID, at: r.now()}
	r.memo.recordSent(key, sent)
	applySent(&next.Status, sent)
	conditions.MarkReady(&next.Status.Conditions, gen, ReasonSynced, syncedMessage(desired, target))
	r.count(OutcomeSent)
	_, err = r.write(ctx, cs, next)
	return controller.Result{}, err
}

func applySent(st *commitstatusv1alpha1.CommitStatusStatus, sent sentRecord) {
	st.SyncedDigest = sent.digest
	st.SyncedPhase = commitstatusv1alpha1.CommitStatusPhase(sent.phase)
	st.SyncedSHA = sent.sha
	st.ProviderID = sent.providerID
	at := metav1.NewTime(sent.at)
	st.LastSyncTime = &at
}

func syncedMessage(d Desired, t *resolve.Target) string {
	return fmt.Sprintf("%s %q is set on %s@%s through ScmProvider %q",
		d.Phase, d.Name, d.Repository, text.ShortSHA(d.SHA), t.ProviderKey)
}

// failed records an SCM error: Stalled when retrying cannot help, requeued after the reset time
// when rate limited, retried with backoff otherwise.
func (r *Reconciler) failed(ctx context.Context, key string, cs, next *commitstatusv1alpha1.CommitStatus, target *resolve.Target, inputs string, err error) (controller.Result, error) {
	gen := cs.Generation
	switch {
	case scm.IsRateLimited(err):
		wait, ok := scm.RetryAfter(err)
		if !ok || wait <= 0 {
			wait = defaultRateLimitWait
		}
		conditions.MarkReconciling(&next.Status.Conditions, gen, ReasonRateLimited, fmt.Sprintf(
			"ScmProvider %q is rate limited; the status is sent once the SCM's limit resets, without further requests until then",
			target.ProviderKey))
		r.count(OutcomeRateLimited)
		if _, werr := r.write(ctx, cs, next); werr != nil {
			return controller.Result{}, werr
		}
		r.Log.Debug("rate limited; requeued", "key", key, "after", wait)
		return controller.Result{RequeueAfter: wait}, nil

	case scm.IsPermanent(err):
		conditions.MarkStalled(&next.Status.Conditions, gen, stalledReason(err),
			fmt.Sprintf("ScmProvider %q: %v", target.ProviderKey, err))
		r.count(OutcomeStalled)
		written, werr := r.write(ctx, cs, next)
		if werr != nil {
			return controller.Result{}, werr
		}
		r.memo.recordFailure(key, inputs, cs.ResourceVersion, written.ResourceVersion)
		return controller.Result{RequeueAfter: r.recheck()}, nil

	default:
		conditions.MarkNotReady(&next.Status.Conditions, gen, ReasonSCMUnavailable,
			fmt.Sprintf("ScmProvider %q: %v; retrying with backoff", target.ProviderKey, err))
		r.count(OutcomeFailed)
		if _, werr := r.write(ctx, cs, next); werr != nil {
			return controller.Result{}, errors.Join(err, werr)
		}
		return controller.Result{}, err
	}
}

// unresolved reports a CommitStatus whose repository, provider or credentials are not usable.
func (r *Reconciler) unresolved(ctx context.Context, cs, next *commitstatusv1alpha1.CommitStatus, rerr *resolve.Error) (controller.Result, error) {
	gen := cs.Generation
	if rerr.Transient {
		conditions.MarkNotReady(&next.Status.Conditions, gen, rerr.Reason, rerr.Message)
		r.count(OutcomeFailed)
		if _, err := r.write(ctx, cs, next); err != nil {
			return controller.Result{}, errors.Join(rerr, err)
		}
		return controller.Result{}, rerr
	}
	conditions.MarkStalled(&next.Status.Conditions, gen, rerr.Reason, rerr.Message)
	r.count(OutcomeStalled)
	if _, err := r.write(ctx, cs, next); err != nil {
		return controller.Result{}, err
	}
	if rerr.Unwatched {
		// Secrets are not watched: look again later, which costs one cached Secret read.
		return controller.Result{RequeueAfter: r.recheck()}, nil
	}
	// A change of the CommitStatus, ScmRepository or ScmProvider brings the key back.
	return controller.Result{}, controller.Permanent(rerr)
}

func (r *Reconciler) count(outcome string) {
	if r.Metrics != nil {
		r.Metrics.Outcomes.WithLabelValues(outcome).Inc()
	}
}
