package healthcheck

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/pkg/text"
)

// maxDescription is the CommitStatus limit on spec.description, in characters.
const maxDescription = 1024

// publication is the CommitStatus write a verdict needs: at most one of Create, Update, Delete.
type publication struct {
	Create, Update *commitstatusv1alpha1.CommitStatus
	// Delete removes the CommitStatus this HealthCheck wrote, once spec.commitStatus is removed:
	// a stale success must not keep a promotion going.
	Delete bool
	// Previous is the status's record of what was published before, kept should the write fail.
	Previous *healthv1alpha1.PublishedCommitStatus
}

// decidePublication keeps one CommitStatus per HealthCheck, named after it, up to date with the
// verdict for the running revision. When the revision changes the same object moves to the new
// commit; the SCM keeps the last status the old commit got.
func decidePublication(d *decision, hc *healthv1alpha1.HealthCheck, e *evaluation, v verdict) {
	st := &d.Status
	d.Publish.Previous = st.CommitStatus
	if hc.Spec.CommitStatus == nil {
		conditions.Remove(&st.Conditions, healthv1alpha1.ConditionCommitStatusPublished)
		if st.CommitStatus != nil {
			d.Publish.Delete = true
			st.CommitStatus = nil
		}
		return
	}
	set := func(status metav1.ConditionStatus, reason, msg string) {
		conditions.Set(&st.Conditions, hc.Generation, healthv1alpha1.ConditionCommitStatusPublished, status, reason, msg)
	}
	read := e.CommitStatus
	switch {
	case !read.Served:
		set(metav1.ConditionFalse, healthv1alpha1.ReasonCommitStatusCRDMissing,
			"the CommitStatus CRD (commitstatus.sluice.dev/v1alpha1) is not installed, so nothing is published; health is still computed. "+
				"Install the CRD, for example with the commitstatus-controller chart")
		return
	case e.RevisionErr != nil:
		set(metav1.ConditionFalse, healthv1alpha1.ReasonRevisionUnavailable, e.RevisionErr.Error())
		return
	case read.Problem != "":
		set(metav1.ConditionFalse, healthv1alpha1.ReasonPublishFailed, read.Problem)
		return
	case read.Err != nil:
		d.Err = read.Err
		return
	}
	desired := desiredCommitStatus(hc, v, e.Commit)
	switch {
	case read.Existing == nil:
		d.Publish.Create = desired
	case !metav1.IsControlledBy(read.Existing, hc):
		set(metav1.ConditionFalse, healthv1alpha1.ReasonNameConflict, fmt.Sprintf(
			"CommitStatus %s/%s exists and is not controlled by this HealthCheck, so it is left alone; delete or rename it, or rename the HealthCheck",
			hc.Namespace, hc.Name))
		return
	default:
		var err error
		if d.Publish.Update, err = updated(read.Existing, desired); err != nil {
			d.Err = fmt.Errorf("reading CommitStatus %s/%s: %w", hc.Namespace, hc.Name, err)
			return
		}
	}
	st.CommitStatus = &healthv1alpha1.PublishedCommitStatus{Name: hc.Name, SHA: e.Commit, Phase: string(v.Phase), Description: desired.Spec.Description}
	set(metav1.ConditionTrue, healthv1alpha1.ReasonPublished, fmt.Sprintf("CommitStatus %s says %s for commit %s: %s",
		hc.Name, v.Phase, e.Commit, desired.Spec.Description))
	if previous := d.Publish.Previous; previous == nil || previous.Phase != st.CommitStatus.Phase || previous.SHA != e.Commit {
		d.Announce.Published = &event{corev1.EventTypeNormal, healthv1alpha1.ReasonPublished,
			fmt.Sprintf("CommitStatus %s: %s for commit %s", hc.Name, v.Phase, e.Commit)}
	}
}

// updated is existing carrying desired's spec and labels, or nil when it already does. The
// suspension is the user's to set, and kept.
func updated(existing *unstructured.Unstructured, desired *commitstatusv1alpha1.CommitStatus) (*commitstatusv1alpha1.CommitStatus, error) {
	var current commitstatusv1alpha1.CommitStatus
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(existing.Object, &current); err != nil {
		return nil, err
	}
	desired.Spec.Suspend = current.Spec.Suspend
	if equality.Semantic.DeepEqual(current.Spec, desired.Spec) && reconcile.HasLabels(current.Labels, desired.Labels) {
		return nil, nil
	}
	update := current.DeepCopy()
	update.Spec = desired.Spec
	if update.Labels == nil {
		update.Labels = map[string]string{}
	}
	for k, v := range desired.Labels {
		update.Labels[k] = v
	}
	return update, nil
}

func desiredCommitStatus(hc *healthv1alpha1.HealthCheck, v verdict, commit string) *commitstatusv1alpha1.CommitStatus {
	cs := hc.Spec.CommitStatus
	name := cs.Name
	if name == "" {
		name = cs.Key
	}
	var lead string
	switch v.Phase {
	case Success:
		lead = "Healthy"
	case Failure:
		lead = "Failed"
		if v.State == TimedOut {
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

func ptrTo[T any](v T) *T { return &v }
