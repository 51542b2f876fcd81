package gatestatus

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
)

// Event reasons on Gates for the objects they hold. The objects themselves get no Event when
// they are held or released: a gate closing over 1,000 Kustomizations would write 1,000 Events,
// as many writes as the holds themselves. Each held object carries the reason in its annotations.
const (
	ReasonHolding  = "Holding"
	ReasonReleased = "Released"
)

// heldNamesInEvent is how many held objects a Holding Event names.
const heldNamesInEvent = 3

// reportHeldCount records one Event on the gate once the number of objects it holds has changed
// and then stayed the same for HeldListInterval, so that a gate closing over many objects
// reports them once, with their count. It returns how long to wait before that can be known.
func (r *Reconciler) reportHeldCount(key string, g *gatingv1alpha1.Gate, st gatingv1alpha1.GateStatus, now time.Time) time.Duration {
	// After a restart, the count as last written is the one already reported.
	last, _ := r.reported.LoadOrStore(key, g.Status.Holding)
	before := last.(int32)
	if st.Holding == before {
		return 0
	}
	if wait := r.sinceLastWrite(key, now); wait > 0 {
		return wait
	}
	r.reported.Store(key, st.Holding)
	if st.Holding > before {
		r.Recorder.Eventf(g, corev1.EventTypeNormal, ReasonHolding, "holds %s, %d more than at the last report: %s",
			objects(st.Holding), st.Holding-before, heldNames(st))
		return 0
	}
	msg := fmt.Sprintf("holds %s, %d released since the last report", objects(st.Holding), before-st.Holding)
	if st.Holding > 0 {
		msg += ": " + heldNames(st)
	}
	r.Recorder.Event(g, corev1.EventTypeNormal, ReasonReleased, msg)
	return 0
}

// heldNames names the first held objects and counts the others.
func heldNames(st gatingv1alpha1.GateStatus) string {
	var names []string
	for _, h := range st.Held[:min(len(st.Held), heldNamesInEvent)] {
		names = append(names, h.Kind+" "+h.Namespace+"/"+h.Name)
	}
	out := strings.Join(names, ", ")
	if more := int(st.Holding) - len(names); more > 0 {
		out += fmt.Sprintf(" and %d more", more)
	}
	return out
}

func objects(n int32) string {
	if n == 1 {
		return "1 object"
	}
	return fmt.Sprintf("%d objects", n)
}
