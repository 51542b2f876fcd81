package commitstatus

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/pkg/text"
)

// action is what apply does with a plan.
type action int

const (
	// actNothing: write nothing (an imported object, or a refusal the status already reports).
	actNothing action = iota
	// actWrite: write the planned status.
	actWrite
	// actSend: send the status to the SCM, then settle the plan on the SCM's answer.
	actSend
)

// plan is what one reconcile does, decided from its observation alone.
type plan struct {
	act action
	// status is the status to write.
	status commitstatusv1alpha1.CommitStatusStatus
	// outcome is counted as the reconcile's outcome.
	outcome string
	// send is the call to make (actSend), and sending the record it leaves once accepted.
	send    scm.CommitStatus
	sending sentRecord
	// result and err are returned once the status is written. When the write fails, err is
	// joined to the write's error if joinErr, and dropped otherwise.
	result  controller.Result
	err     error
	joinErr bool
	// rememberFailure: the SCM refused these inputs for good; skip them until something changes.
	rememberFailure string
	// rateLimitedFor is logged when the SCM asked to wait.
	rateLimitedFor time.Duration
}

// decide says what a reconcile of o does: mirror what the SCM holds, skip what the memo says was
// refused, or send.
func decide(o observation) plan {
	if o.imported {
		// Imported from the SCM (internal/scmimport): the SCM already holds it, and sending it
		// back would make this controller the author of another system's verdict.
		return plan{act: actNothing, outcome: OutcomeImported}
	}
	p := plan{act: actWrite, status: *o.next.Status.DeepCopy()}
	gen := o.cs.Generation
	switch {
	case o.selfSuspended != nil:
		reportNotSent(&p.status.Conditions, o.cs, o.target, *o.selfSuspended)
		p.outcome = OutcomeSuspended
	case o.unresolved != nil:
		return unresolved(o, p)
	case o.target.Suspended != nil:
		suspend.Report(&p.status.Conditions, gen, *o.target.Suspended)
		reportNotSent(&p.status.Conditions, o.cs, o.target, *o.target.Suspended)
		p.outcome = OutcomeSuspended
	case o.target.InCluster:
		conditions.MarkReady(&p.status.Conditions, gen, ReasonInCluster, fmt.Sprintf(
			"ScmProvider %q is of type %s, which has no SCM API: this object is the commit status, and promotions read it from the cluster; nothing is sent",
			o.target.ProviderKey, o.target.ProviderType))
		p.outcome = OutcomeInCluster
	default:
		return decideSync(o, p)
	}
	return p
}

// decideSync mirrors a send the SCM already holds, skips a call refused for good, or sends.
func decideSync(o observation, p plan) plan {
	desired := DesiredFor(o.cs, o.target)
	digest := desired.Digest()
	if o.cs.Status.SyncedDigest != digest && o.hasSent && o.sent.digest == digest {
		// Sent by this process, but the status write was lost or the cache is behind.
		applySent(&p.status, o.sent)
	}
	if p.status.SyncedDigest == digest {
		conditions.MarkReady(&p.status.Conditions, o.cs.Generation, ReasonSynced, syncedMessage(desired, o.target))
		p.outcome = OutcomeUnchanged
		return p
	}
	if o.failedBefore {
		// This exact call was refused for good; the status already says why.
		return plan{act: actNothing, outcome: OutcomeStalled, result: controller.Result{RequeueAfter: o.recheck}}
	}
	p.act = actSend
	p.send = scm.CommitStatus{
		SHA:         o.cs.Spec.SHA,
		Name:        o.cs.Spec.Name,
		State:       scm.StatusState(o.cs.Spec.Phase),
		Description: o.cs.Spec.Description,
		TargetURL:   o.cs.Spec.URL,
	}
	if o.cs.Status.SyncedSHA == o.cs.Spec.SHA {
		// Lets a GitHub App update its check run instead of starting another.
		p.send.ProviderID = o.cs.Status.ProviderID
	}
	p.sending = sentRecord{digest: digest, phase: string(o.cs.Spec.Phase), sha: o.cs.Spec.SHA}
	return p
}

// settle completes a send's plan with the SCM's answer: synced when accepted; backed off until
// the reset time when rate limited; given up (Stalled, remembered) when retrying cannot help;
// retried with backoff otherwise. out and at are the SCM's answer and when it came.
func settle(o observation, p plan, out scm.CommitStatus, at time.Time, err error) plan {
	gen, key := o.cs.Generation, o.target.ProviderKey
	p.act = actWrite
	switch {
	case err == nil:
		p.sending.providerID, p.sending.at = out.ProviderID, at
		applySent(&p.status, p.sending)
		conditions.MarkReady(&p.status.Conditions, gen, ReasonSynced, syncedMessage(DesiredFor(o.cs, o.target), o.target))
		p.outcome = OutcomeSent
	case scm.IsRateLimited(err):
		wait, ok := scm.RetryAfter(err)
		if !ok || wait <= 0 {
			wait = defaultRateLimitWait
		}
		conditions.MarkReconciling(&p.status.Conditions, gen, ReasonRateLimited, fmt.Sprintf(
			"ScmProvider %q is rate limited; the status is sent once the SCM's limit resets, without further requests until then", key))
		p.outcome, p.result, p.rateLimitedFor = OutcomeRateLimited, controller.Result{RequeueAfter: wait}, wait
	case scm.IsPermanent(err):
		conditions.MarkStalled(&p.status.Conditions, gen, stalledReason(err), fmt.Sprintf("ScmProvider %q: %v", key, err))
		p.outcome, p.result = OutcomeStalled, controller.Result{RequeueAfter: o.recheck}
		p.rememberFailure = inputs(p.sending.digest, o.target)
	default:
		conditions.MarkNotReady(&p.status.Conditions, gen, ReasonSCMUnavailable,
			fmt.Sprintf("ScmProvider %q: %v; retrying with backoff", key, err))
		p.outcome, p.err, p.joinErr = OutcomeFailed, err, true
	}
	return p
}

// unresolved reports a CommitStatus whose repository, provider or credentials are not usable.
func unresolved(o observation, p plan) plan {
	rerr, gen := o.unresolved, o.cs.Generation
	if rerr.Transient {
		conditions.MarkNotReady(&p.status.Conditions, gen, rerr.Reason, rerr.Message)
		p.outcome, p.err, p.joinErr = OutcomeFailed, rerr, true
		return p
	}
	conditions.MarkStalled(&p.status.Conditions, gen, rerr.Reason, rerr.Message)
	p.outcome = OutcomeStalled
	if rerr.Unwatched {
		// Secrets are not watched: look again later, which costs one cached Secret read.
		p.result = controller.Result{RequeueAfter: o.recheck}
		return p
	}
	// A change of the CommitStatus, ScmRepository or ScmProvider brings the key back.
	p.err = controller.Permanent(rerr)
	return p
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

// reportNotSent keeps Ready true to what the SCM holds while nothing is sent. Ready=True says the
// SCM shows the phase the spec asks for; once the spec moves on while suspended, that is no longer
// so, and `kubectl get` must not show SYNCED True for a phase that was never sent. Ready then reads
// Unknown (NotSent) until the spec matches what was synced again, or the object is resumed and
// sent. A Ready=False (a failed or refused send) keeps its own, more useful, reason. target is nil
// when the repository or provider cannot be found.
func reportNotSent(conds *[]metav1.Condition, cs *commitstatusv1alpha1.CommitStatus, target *resolve.Target, s suspend.State) {
	gen := cs.Generation
	ready := conditions.Get(*conds, conditions.Ready)
	if ready != nil && ready.Reason == ReasonInCluster {
		// The object itself is the status: nothing is ever sent.
		return
	}
	if target != nil && cs.Status.SyncedDigest != "" && cs.Status.SyncedDigest == DesiredFor(cs, target).Digest() {
		if ready != nil && ready.Reason == ReasonNotSent {
			conditions.MarkReady(conds, gen, ReasonSynced, syncedMessage(DesiredFor(cs, target), target))
		}
		return
	}
	if ready == nil || ready.Status == metav1.ConditionTrue || ready.Reason == ReasonNotSent {
		conditions.Set(conds, gen, conditions.Ready, metav1.ConditionUnknown, ReasonNotSent, "not sent: suspended: "+s.Message)
	}
}
