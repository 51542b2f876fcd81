package commitstatus

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// suspended writes the status of a CommitStatus that sends nothing, because it or its
// ScmRepository or ScmProvider is suspended. target is nil when the repository or provider cannot
// be found.
func (r *Reconciler) suspended(ctx context.Context, cs, next *commitstatusv1alpha1.CommitStatus, target *resolve.Target, s suspend.State) (controller.Result, error) {
	reportNotSent(&next.Status.Conditions, cs, target, s)
	r.count(OutcomeSuspended)
	_, err := r.write(ctx, cs, next)
	return controller.Result{}, err
}

// reportNotSent keeps Ready true to what the SCM holds while nothing is sent. Ready=True says the
// SCM shows the phase the spec asks for; once the spec moves on while suspended, that is no longer
// so, and `kubectl get` must not show SYNCED True for a phase that was never sent. Ready then reads
// Unknown (NotSent) until the spec matches what was synced again, or the object is resumed and
// sent. A Ready=False (a failed or refused send) keeps its own, more useful, reason.
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
