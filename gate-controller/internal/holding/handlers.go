package holding

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/gate-controller/internal/hold"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
)

// TargetHandler enqueues a watched kind's targets when they change, and the gates whose held
// lists may change with them. Objects that neither reference a gate nor carry a hold are ignored,
// so the controller does no work for the rest of a kind, except sources that targets follow
// for an approval of their revision: a change of one brings those targets back.
func TargetHandler(w *Watched, targets, gates handler.Enqueuer, followers *Followers) cache.ResourceEventHandler {
	enqueueFollowers := func(m metav1.Object) {
		for _, key := range followers.Of(Key(w.GroupResource(), m)) {
			targets.Enqueue(key)
		}
	}
	enqueueGates := func(objs ...metav1.Object) {
		for _, o := range objs {
			for _, ref := range gatesOf(o) {
				gates.Enqueue(ref.String())
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if m, ok := handler.Object(obj); ok {
				enqueueFollowers(m)
			}
			if m, ok := handler.Object(obj); ok && isTarget(m) {
				targets.Enqueue(Key(w.GroupResource(), m))
				enqueueGates(m)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			oldM, okOld := handler.Object(oldObj)
			newM, okNew := handler.Object(newObj)
			if !okOld || !okNew || oldM.GetResourceVersion() == newM.GetResourceVersion() {
				return
			}
			enqueueFollowers(newM)
			if !isTarget(oldM) && !isTarget(newM) {
				return
			}
			targets.Enqueue(Key(w.GroupResource(), newM))
			if holdView(oldM) != holdView(newM) {
				enqueueGates(oldM, newM)
			}
		},
		DeleteFunc: func(obj any) {
			if m, ok := handler.Object(obj); ok {
				enqueueFollowers(m)
			}
			if m, ok := handler.Object(obj); ok && isTarget(m) {
				targets.Enqueue(Key(w.GroupResource(), m))
				enqueueGates(m)
			}
		},
	}
}

// holdViewKey is what a gate's held list depends on.
type holdViewKey struct {
	gates, record string
	owned         hold.Owned
}

func holdView(m metav1.Object) holdViewKey {
	a := m.GetAnnotations()
	return holdViewKey{gates: a[gate.GatesAnnotation], record: a[hold.RecordAnnotation], owned: hold.OwnedFields(m.GetManagedFields())}
}

// GateHandler enqueues the targets of a gate when what they read from it changes, and marks
// them for the enforcement latency when its state flips.
func GateHandler(registry *Registry, targets handler.Enqueuer, latency *Latency) cache.ResourceEventHandler {
	enqueue := func(g *gatingv1alpha1.Gate, flipped bool) {
		ref := gate.Ref{Namespace: g.Namespace, Name: g.Name}
		keys := registry.Referencing(ref)
		if flipped {
			latency.Mark(ref, keys, time.Now())
		}
		for _, key := range keys {
			targets.Enqueue(key)
		}
	}
	return handler.Funcs[*gatingv1alpha1.Gate]{
		Add: func(g *gatingv1alpha1.Gate) { enqueue(g, false) },
		Update: func(oldG, newG *gatingv1alpha1.Gate) {
			before, after := verdictView(oldG), verdictView(newG)
			if before != after {
				enqueue(newG, before.evaluated && after.evaluated && before.open != after.open)
			}
			if oldG.Annotations[gate.GatesAnnotation] != newG.Annotations[gate.GatesAnnotation] {
				// A gate's own references changed: a cycle of gates may have formed or broken
				// anywhere along them, so every gate that references gates decides again.
				for _, key := range registry.GatesReferencingGates() {
					targets.Enqueue(key)
				}
			}
		},
		Delete: func(g *gatingv1alpha1.Gate) {
			latency.Forget(gate.Ref{Namespace: g.Namespace, Name: g.Name})
			enqueue(g, false)
		},
	}
}

// gateView is what a target's verdict reads from a gate (see gate.Allows).
type gateView struct {
	generation, observed int64
	open, evaluated      bool
	condition            metav1.ConditionStatus
	reason, message      string
	// approvals are the approved revisions and their expiries, which decide for closed gates.
	approvals string
}

func verdictView(g *gatingv1alpha1.Gate) gateView {
	v := gateView{generation: g.Generation, observed: g.Status.ObservedGeneration, open: g.Status.Open, reason: g.Status.Reason, message: g.Status.Message}
	for _, a := range g.Status.Approvals {
		v.approvals += a.Revision + "|"
		if a.Until != nil {
			v.approvals += a.Until.UTC().Format(time.RFC3339)
		}
		v.approvals += ";"
	}
	if c := meta.FindStatusCondition(g.Status.Conditions, gatingv1alpha1.ConditionOpen); c != nil {
		v.evaluated, v.condition = true, c.Status
	}
	return v
}
