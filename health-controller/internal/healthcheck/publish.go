package healthcheck

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/health-controller/internal/verdict"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/pkg/text"
)

// maxDescription is the CommitStatus limit on spec.description, in characters.
const maxDescription = 1024

// publish keeps one CommitStatus per HealthCheck, named after it, up to date with the verdict for
// the running revision. When the revision changes the same object moves to the new commit; the
// SCM keeps the last status the old commit got.
func (r *Reconciler) publish(ctx context.Context, hc *healthv1alpha1.HealthCheck, p *plan, v verdict.Verdict, commit string, revErr error) error {
	st := &hc.Status
	cs := hc.Spec.CommitStatus
	if cs == nil {
		conditions.Remove(&st.Conditions, healthv1alpha1.ConditionCommitStatusPublished)
		if st.CommitStatus != nil {
			if err := r.unpublish(ctx, hc); err != nil {
				return err
			}
			st.CommitStatus = nil
		}
		return nil
	}
	set := func(status metav1.ConditionStatus, reason, msg string) {
		conditions.Set(&st.Conditions, hc.Generation, healthv1alpha1.ConditionCommitStatusPublished, status, reason, msg)
	}
	if !p.commitStatusServed {
		set(metav1.ConditionFalse, healthv1alpha1.ReasonCommitStatusCRDMissing,
			"the CommitStatus CRD (commitstatus.sluice.dev/v1alpha1) is not installed, so nothing is published; health is still computed. "+
				"Install the CRD, for example with the commitstatus-controller chart")
		return nil
	}
	if revErr != nil {
		set(metav1.ConditionFalse, healthv1alpha1.ReasonRevisionUnavailable, revErr.Error())
		return nil
	}

	desired := desiredCommitStatus(hc, v, commit)
	rd := r.reads(hc)
	if synced, err := rd.State(*p.commitStatus); !synced {
		set(metav1.ConditionFalse, healthv1alpha1.ReasonPublishFailed, watchProblem(*p.commitStatus, err))
		return nil
	}
	existing, found, err := rd.Get(*p.commitStatus, hc.Namespace, hc.Name)
	if err != nil {
		return err
	}
	client := r.Client.CommitstatusV1alpha1().CommitStatuses(hc.Namespace)
	switch {
	case !found:
		if _, err := client.Create(ctx, desired, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
			set(metav1.ConditionFalse, healthv1alpha1.ReasonPublishFailed, "creating CommitStatus: "+err.Error())
			return fmt.Errorf("creating CommitStatus %s/%s: %w", hc.Namespace, hc.Name, err)
		}
	case !metav1.IsControlledBy(existing, hc):
		set(metav1.ConditionFalse, healthv1alpha1.ReasonNameConflict, fmt.Sprintf(
			"CommitStatus %s/%s exists and is not controlled by this HealthCheck, so it is left alone; delete or rename it, or rename the HealthCheck",
			hc.Namespace, hc.Name))
		return nil
	default:
		var current commitstatusv1alpha1.CommitStatus
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(existing.Object, &current); err != nil {
			return fmt.Errorf("reading CommitStatus %s/%s: %w", hc.Namespace, hc.Name, err)
		}
		desired.Spec.Suspend = current.Spec.Suspend
		if !equality.Semantic.DeepEqual(current.Spec, desired.Spec) || !reconcile.HasLabels(current.Labels, desired.Labels) {
			update := current.DeepCopy()
			update.Spec = desired.Spec
			if update.Labels == nil {
				update.Labels = map[string]string{}
			}
			for k, v := range desired.Labels {
				update.Labels[k] = v
			}
			if _, err := client.Update(ctx, update, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
				set(metav1.ConditionFalse, healthv1alpha1.ReasonPublishFailed, "updating CommitStatus: "+err.Error())
				return fmt.Errorf("updating CommitStatus %s/%s: %w", hc.Namespace, hc.Name, err)
			}
		}
	}
	previous := st.CommitStatus
	st.CommitStatus = &healthv1alpha1.PublishedCommitStatus{Name: hc.Name, SHA: commit, Phase: string(v.Phase), Description: desired.Spec.Description}
	set(metav1.ConditionTrue, healthv1alpha1.ReasonPublished, fmt.Sprintf("CommitStatus %s says %s for commit %s: %s",
		hc.Name, v.Phase, commit, desired.Spec.Description))
	if previous == nil || previous.Phase != st.CommitStatus.Phase || previous.SHA != commit {
		r.Recorder.Eventf(hc, corev1.EventTypeNormal, healthv1alpha1.ReasonPublished, "CommitStatus %s: %s for commit %s", hc.Name, v.Phase, commit)
	}
	return nil
}

func desiredCommitStatus(hc *healthv1alpha1.HealthCheck, v verdict.Verdict, commit string) *commitstatusv1alpha1.CommitStatus {
	cs := hc.Spec.CommitStatus
	name := cs.Name
	if name == "" {
		name = cs.Key
	}
	var lead string
	switch v.Phase {
	case verdict.Success:
		lead = "Healthy"
	case verdict.Failure:
		lead = "Failed"
		if v.State == verdict.TimedOut {
			lead = "Timed out"
		}
	default:
		lead = "In progress"
	}
	return &commitstatusv1alpha1.CommitStatus{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: hc.Namespace,
			Name:      hc.Name,
			Labels: map[string]string{
				commitstatusv1alpha1.KeyLabel:   cs.Key,
				healthv1alpha1.HealthCheckLabel: hc.Name,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: healthv1alpha1.SchemeGroupVersion.String(),
				Kind:       "HealthCheck",
				Name:       hc.Name,
				UID:        hc.UID,
				Controller: ptrTo(true),
			}},
		},
		Spec: commitstatusv1alpha1.CommitStatusSpec{
			RepositoryRef: commitstatusv1alpha1.RepositoryReference{Name: cs.RepositoryRef.Name},
			SHA:           commit,
			Name:          name,
			Description:   text.Truncate(lead+": "+v.Description, maxDescription),
			Phase:         commitstatusv1alpha1.CommitStatusPhase(v.Phase),
			URL:           cs.URL,
		},
	}
}

// unpublish deletes the CommitStatus this HealthCheck wrote, once spec.commitStatus is removed: a
// stale success must not keep a promotion going.
func (r *Reconciler) unpublish(ctx context.Context, hc *healthv1alpha1.HealthCheck) error {
	client := r.Client.CommitstatusV1alpha1().CommitStatuses(hc.Namespace)
	current, err := client.Get(ctx, hc.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading CommitStatus %s/%s to delete it: %w", hc.Namespace, hc.Name, err)
	}
	if !metav1.IsControlledBy(current, hc) {
		return nil
	}
	uid := current.UID
	err = client.Delete(ctx, hc.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting CommitStatus %s/%s: %w", hc.Namespace, hc.Name, err)
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }
