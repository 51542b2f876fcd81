package promotionstrategy

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
)

// apply writes each environment's PullRequest and ProposedCommit, in spec order.
func (r *Reconciler) apply(ctx context.Context, ps *promoterv1alpha1.PromotionStrategy, plans []envPlan) error {
	for _, p := range plans {
		if err := r.applyPullRequest(ctx, ps, p.PullRequest); err != nil {
			return err
		}
		if err := r.applyProposedCommit(ctx, ps.Namespace, p.ProposedCommit); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) applyPullRequest(ctx context.Context, ps *promoterv1alpha1.PromotionStrategy, p pullRequestPlan) error {
	client := r.Client.PromoterV1alpha1().PullRequests(ps.Namespace)
	if p.Replace != "" {
		name := p.Create.Name
		uid := p.Replace
		// The uid precondition deletes only the finished pull request that was read.
		if err := client.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete finished PullRequest %s: %w", name, err)
		}
	}
	switch {
	case p.Create != nil:
		if _, err := client.Create(ctx, p.Create, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("create PullRequest %s: %w", p.Create.Name, err)
		}
	case p.Update != nil:
		if _, err := client.Update(ctx, p.Update, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("update PullRequest %s: %w", p.Update.Name, err)
		}
	}
	if p.Started != nil {
		r.Recorder.Event(ps, p.Started.Type, p.Started.Reason, p.Started.Message)
	}
	if p.Enqueue != "" && r.PullRequestQueue != nil {
		r.PullRequestQueue.Enqueue(p.Enqueue)
	}
	return nil
}

func (r *Reconciler) applyProposedCommit(ctx context.Context, ns string, p proposedCommitPlan) error {
	client := r.Client.PromoterV1alpha1().ProposedCommits(ns)
	cur := p.Current
	var err error
	if cur == nil {
		cur, err = client.Create(ctx, p.New, metav1.CreateOptions{FieldManager: FieldManager})
		if apierrors.IsAlreadyExists(err) {
			cur, err = client.Get(ctx, p.New.Name, metav1.GetOptions{})
		}
		if err != nil {
			return fmt.Errorf("ProposedCommit %s: %w", p.New.Name, err)
		}
	}
	if !equality.Semantic.DeepEqual(cur.Spec, p.Spec) || !reconcile.HasLabels(cur.Labels, p.Labels) {
		next := cur.DeepCopy()
		next.Spec = p.Spec
		if next.Labels == nil {
			next.Labels = map[string]string{}
		}
		for k, v := range p.Labels {
			next.Labels[k] = v
		}
		if cur, err = client.Update(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("update ProposedCommit %s: %w", next.Name, err)
		}
	}
	next := cur.DeepCopy()
	next.Status = proposedCommitStatus(cur, p.State)
	_, _, err = proposedCommitStatusWriter.Write(ctx, client, cur, next)
	return err
}

// proposedCommitStatusWriter writes ProposedCommit status; a conflict is retried on the live
// object, which is safe: the status is what this reconcile read from git and the cluster.
var proposedCommitStatusWriter = reconcile.StatusWriter[*promoterv1alpha1.ProposedCommit, promoterv1alpha1.ProposedCommitStatus]{
	Kind: "ProposedCommit", FieldManager: FieldManager,
	Status: func(pc *promoterv1alpha1.ProposedCommit) *promoterv1alpha1.ProposedCommitStatus { return &pc.Status },
}
