package pullrequest

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/pkg/scm"
)

// stall reports a repository or provider a person must fix, with a Warning Event once per new
// problem, sent only after the write that records it. Like every status write it is not retried
// on a conflict: a stall decided from a stale copy would land again with a new transition time,
// and be announced again; the reconcile the conflict brings back decides from the live object,
// finds it stalled already, and writes and says nothing.
func (r *Reconciler) stall(ctx context.Context, cur, pr *promoterv1alpha1.PullRequest, reason, problem string) error {
	conditions.MarkStalled(&pr.Status.Conditions, pr.Generation, reason, problem)
	pr.Status.ObservedGeneration = pr.Generation
	_, wrote, err := statusWriter.Write(ctx, r.Client.PromoterV1alpha1().PullRequests(pr.Namespace), cur, pr)
	if wrote {
		r.Recorder.Event(pr, corev1.EventTypeWarning, reason, problem)
	}
	return err
}

// fail writes status with the error, Stalled when retrying cannot help.
func (r *Reconciler) fail(ctx context.Context, cur, pr *promoterv1alpha1.PullRequest, status promoterv1alpha1.PullRequestStatus, problem error) (controller.Result, error) {
	permanent := scm.IsPermanent(problem) || controller.IsPermanent(problem)
	failed(&status, pr, problem, permanent)
	if _, err := r.writeStatus(ctx, cur, status); err != nil {
		return controller.Result{}, err
	}
	if permanent {
		return controller.Result{}, controller.Permanent(problem)
	}
	return controller.Result{}, problem
}

// statusWriter writes PullRequest status, and returns a conflict rather than put this
// reconcile's status on a live object that moved on. A status is decided from the cache's copy,
// and carries over what that copy says: put on the live object, one decided from a copy older
// than the merge ("open, waits for spec.state merged") undid the merge's record, and the next
// reconcile merged the same pull request again onto a target put back on its base since. The
// reconcile the conflict brings back decides again from the live object.
var statusWriter = reconcile.StatusWriter[*promoterv1alpha1.PullRequest, promoterv1alpha1.PullRequestStatus]{
	Kind: "PullRequest", FieldManager: FieldManager, ReturnConflicts: true,
	Status: func(pr *promoterv1alpha1.PullRequest) *promoterv1alpha1.PullRequestStatus { return &pr.Status },
}

// writeStatus writes status on cur and returns the object as stored.
func (r *Reconciler) writeStatus(ctx context.Context, cur *promoterv1alpha1.PullRequest, status promoterv1alpha1.PullRequestStatus) (*promoterv1alpha1.PullRequest, error) {
	next := cur.DeepCopy()
	next.Status = status
	stored, _, err := statusWriter.Write(ctx, r.Client.PromoterV1alpha1().PullRequests(cur.Namespace), cur, next)
	return stored, err
}

// alignSpec sets the spec.state of a finished pull request to what happened to it.
func (r *Reconciler) alignSpec(ctx context.Context, cur *promoterv1alpha1.PullRequest) error {
	spec, changed := alignedSpec(cur)
	if !changed {
		return nil
	}
	next := cur.DeepCopy()
	next.Spec = spec
	_, err := r.Client.PromoterV1alpha1().PullRequests(cur.Namespace).Update(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager})
	if apierrors.IsConflict(err) {
		// The status write just made is not in the cache yet, or someone changed the spec:
		// the next event brings the object back.
		return nil
	}
	return err
}
