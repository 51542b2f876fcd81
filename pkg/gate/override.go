package gate

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
)

// MaxReplacedOverrides bounds override.replaces.overrides, as the CRD does.
const MaxReplacedOverrides = 8

// NewOverride is the override that sets state until until on a gate whose spec is spec at now,
// recording what it replaces so that its expiry restores it: a manual close (the override is
// then a bypass of it), and the overrides in force now, newest first, expired ones dropped.
func NewOverride(spec gatingv1alpha1.GateSpec, state gatingv1alpha1.GateState, until time.Time, message string, now time.Time) *gatingv1alpha1.GateOverride {
	o := &gatingv1alpha1.GateOverride{State: state, Until: metav1.NewTime(until), Message: message}
	var replaced []gatingv1alpha1.GateOverrideState
	for _, layer := range overrideLayers(spec.Override) {
		if now.Before(layer.Until.Time) && len(replaced) < MaxReplacedOverrides {
			replaced = append(replaced, layer)
		}
	}
	if spec.Closed || len(replaced) > 0 {
		o.Replaces = &gatingv1alpha1.GateReplaced{Closed: spec.Closed, Overrides: replaced}
	}
	return o
}
