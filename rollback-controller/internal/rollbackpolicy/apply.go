package rollbackpolicy

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
)

// apply creates the planned RevertCommits in order, records each in its environment's status,
// and fills p's status. It returns what to announce once that status is written; on an error
// nothing of the plan is put in the status.
func (r *Reconciler) apply(ctx context.Context, p *rollbackv1alpha1.RollbackPolicy, pl plan) ([]func(), error) {
	var announce []func()
	for _, c := range pl.creates {
		rc, err := r.create(ctx, c.revertCommit)
		if err != nil {
			return nil, err
		}
		st := &pl.environments[c.env]
		st.LastRollback = &rollbackv1alpha1.PolicyRollback{RevertCommit: rc.Name, BadDrySHA: c.revertCommit.Spec.BadDrySHA, Time: rc.CreationTimestamp}
		announce = append(announce, r.announceFire(p, st.Branch, rc))
	}
	for _, labels := range pl.triggers {
		announce = append(announce, func() { r.Metrics.PolicyTriggers.WithLabelValues(labels...).Inc() })
	}
	p.Status.Environments = pl.environments
	conditions.MarkReady(&p.Status.Conditions, p.Generation, "Watching", pl.summary)
	return announce, nil
}

// create creates rc, or finds the one an earlier attempt created under the same name.
func (r *Reconciler) create(ctx context.Context, rc *rollbackv1alpha1.RevertCommit) (*rollbackv1alpha1.RevertCommit, error) {
	client := r.Client.RollbackV1alpha1().RevertCommits(rc.Namespace)
	created, err := client.Create(ctx, rc, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		created, err = client.Get(ctx, rc.Name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("create RevertCommit %s: %w", rc.Name, err)
	}
	return created, nil
}

func (r *Reconciler) announceFire(p *rollbackv1alpha1.RollbackPolicy, env string, rc *rollbackv1alpha1.RevertCommit) func() {
	return func() {
		r.Recorder.Eventf(p, corev1.EventTypeWarning, EventRevertCommitCreated, "%s: created RevertCommit %s: %s", env, rc.Name, rc.Spec.Reason)
	}
}
