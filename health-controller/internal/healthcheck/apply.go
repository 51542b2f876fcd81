package healthcheck

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
)

// apply makes the decision's writes: the CommitStatus, then the status, which records how the
// CommitStatus write went; then, once the status landed, the Events and metrics.
func (r *Reconciler) apply(ctx context.Context, o *observation, d decision) (controller.Result, error) {
	hc := o.HealthCheck
	if d.Release {
		r.release(o.Key)
	}
	publishErr := r.publish(ctx, hc, &d)
	if err := r.writeStatus(ctx, hc, d.Status); err != nil {
		return controller.Result{}, err
	}
	r.announce(hc, d.Announce)
	if publishErr != nil {
		return controller.Result{}, publishErr
	}
	if d.Err != nil {
		return controller.Result{}, d.Err
	}
	return controller.Result{RequeueAfter: d.RequeueAfter}, nil
}

// publish writes the decided CommitStatus. Should the write fail, the status says so and keeps
// its record of what was published before, and there is no Event of a new verdict.
func (r *Reconciler) publish(ctx context.Context, hc *healthv1alpha1.HealthCheck, d *decision) error {
	p := d.Publish
	client := r.Client.CommitstatusV1alpha1().CommitStatuses(hc.Namespace)
	var verb string
	var err error
	switch {
	case p.Delete:
		if err = r.unpublish(ctx, hc); err != nil {
			d.Status.CommitStatus = p.Previous
		}
		return err
	case p.Create != nil:
		verb = "creating"
		_, err = client.Create(ctx, p.Create, metav1.CreateOptions{FieldManager: FieldManager})
	case p.Update != nil:
		verb = "updating"
		_, err = client.Update(ctx, p.Update, metav1.UpdateOptions{FieldManager: FieldManager})
	}
	if err == nil {
		return nil
	}
	d.Status.CommitStatus = p.Previous
	conditions.Set(&d.Status.Conditions, hc.Generation, healthv1alpha1.ConditionCommitStatusPublished,
		metav1.ConditionFalse, healthv1alpha1.ReasonPublishFailed, verb+" CommitStatus: "+err.Error())
	d.Announce.Published = nil
	return fmt.Errorf("%s CommitStatus %s/%s: %w", verb, hc.Namespace, hc.Name, err)
}

// unpublish deletes the CommitStatus this HealthCheck wrote. The read is live: the uid
// precondition deletes only the object that was read.
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

// healthCheckStatus writes HealthCheck status as the controller. The status builds on what earlier
// reconciles decided (when health began, when it was last healthy), so a conflict is returned
// rather than put on a live object that moved on: the reconcile it brings back decides again.
var healthCheckStatus = reconcile.StatusWriter[*healthv1alpha1.HealthCheck, healthv1alpha1.HealthCheckStatus]{
	Kind: "HealthCheck", FieldManager: FieldManager, ReturnConflicts: true,
	Status: func(hc *healthv1alpha1.HealthCheck) *healthv1alpha1.HealthCheckStatus { return &hc.Status },
}

// writeStatus stores status unless it equals cached's. A HealthCheck deleted meanwhile has
// nothing left to write.
func (r *Reconciler) writeStatus(ctx context.Context, cached *healthv1alpha1.HealthCheck, status healthv1alpha1.HealthCheckStatus) error {
	next := cached.DeepCopy()
	next.Status = status
	_, _, err := healthCheckStatus.Write(ctx, r.Client.HealthV1alpha1().HealthChecks(cached.Namespace), cached, next)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// announce makes the Events, log line and metrics of a status that was written.
func (r *Reconciler) announce(hc *healthv1alpha1.HealthCheck, a announcements) {
	if a.Published != nil {
		r.Recorder.Event(hc, a.Published.Type, a.Published.Reason, a.Published.Message)
	}
	if c := a.Changed; c != nil {
		r.Log.Info("health changed", "healthcheck", hc.Namespace+"/"+hc.Name, "state", c.State,
			"revision", c.Revision, "summary", c.Summary)
	}
	for _, e := range a.Events {
		r.Recorder.Event(hc, e.Type, e.Reason, e.Message)
	}
	if a.CompileError {
		r.Metrics.CELErrors.WithLabelValues("compile").Inc()
	}
	if e := a.Evaluation; e != nil {
		r.Metrics.Duration.Observe(e.Took.Seconds())
		r.Metrics.CELErrors.WithLabelValues("evaluation").Add(float64(e.Errors))
	}
	r.Metrics.setState(hc, a.State)
	if a.Counts != nil {
		r.Metrics.setCounts(hc, *a.Counts)
	}
}
