package commitstatus

import (
	"context"
	"time"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// observation is everything one reconcile reads: the object, where its status goes, and what
// this process remembers of earlier sends.
type observation struct {
	key string
	// cs is the cached object; next is its copy with ObservedGeneration, ShortSHA and the object's
	// own Suspended condition already reported.
	cs, next *commitstatusv1alpha1.CommitStatus
	// imported: read from the SCM (internal/scmimport), never sent back.
	imported bool
	// selfSuspended is the object's own suspension, when it is suspended.
	selfSuspended *suspend.State
	// target is where the status goes: located only (may be nil) when selfSuspended, resolved
	// with its credentials otherwise.
	target *resolve.Target
	// unresolved says why target could not be resolved.
	unresolved *resolve.Error
	// sent is what this process last sent for key, when hasSent.
	sent    sentRecord
	hasSent bool
	// failedBefore: the SCM refused exactly these inputs for good on this version of the object.
	failedBefore bool
	// recheck is how long to wait before looking again at what no watch brings back.
	recheck time.Duration
}

// inputs names one SCM call for the failure memo: the desired state and the credentials.
func inputs(digest string, t *resolve.Target) string { return digest + " " + t.CredentialsVersion }

func (r *Reconciler) observe(ctx context.Context, key string) (observation, bool, error) {
	l, found, err := reconcile.Load(key, r.get, func(cs *commitstatusv1alpha1.CommitStatus) bool { return cs.Spec.Suspend })
	if !found {
		return observation{}, false, err
	}
	o := observation{key: key, cs: l.Cached, next: l.Next, recheck: r.recheck()}
	if o.cs.Labels[commitstatusv1alpha1.ImportedLabel] == "true" {
		o.imported = true
		return o, true, nil
	}
	o.next.Status.ObservedGeneration = o.cs.Generation
	o.next.Status.ShortSHA = commitstatusv1alpha1.ShortSHA(o.cs.Spec.SHA)
	if l.ReportSuspend(&o.next.Status.Conditions) {
		s := l.Suspend
		o.selfSuspended = &s
		o.target, _ = r.Resolver.Locate(o.cs)
		return o, true, nil
	}
	o.target, o.unresolved = r.Resolver.Resolve(ctx, o.cs)
	if o.unresolved != nil || o.target.Suspended != nil || o.target.InCluster {
		return o, true, nil
	}
	o.sent, o.hasSent = r.memo.lastSent(key)
	o.failedBefore = r.memo.failedBefore(key, inputs(DesiredFor(o.cs, o.target).Digest(), o.target), o.cs.ResourceVersion)
	return o, true, nil
}

func (r *Reconciler) get(namespace, name string) (*commitstatusv1alpha1.CommitStatus, error) {
	return r.Statuses.CommitStatuses(namespace).Get(name)
}
