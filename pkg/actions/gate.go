package actions

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	gatingclient "github.com/sluicehq/sluice/api/generated/clientset/versioned/typed/gating/v1alpha1"
	"github.com/sluicehq/sluice/pkg/gate"
)

// GateChange opens or closes a gate.
type GateChange struct {
	// Open is the state asked for: open, or else closed.
	Open bool
	// For, when positive, sets an override that keeps the state for this long and then gives
	// the gate back what it is now; zero changes the gate by hand (spec.closed, spec.message)
	// and removes any override.
	For time.Duration
	// Message says why.
	Message string
}

// State is the gate state the change asks for.
func (c GateChange) State() gatingv1alpha1.GateState {
	if c.Open {
		return gatingv1alpha1.StateOpen
	}
	return gatingv1alpha1.StateClosed
}

// Until is when an override set at now ends, to the second.
func (c GateChange) Until(now time.Time) time.Time {
	return now.Add(c.For).UTC().Truncate(time.Second)
}

// SetGate applies change to the gate name at now, reading it again when someone else changed
// it in between, so an override records exactly the state it replaces.
func SetGate(ctx context.Context, gates gatingclient.GateInterface, name string, change GateChange, now time.Time, fieldManager string) (*gatingv1alpha1.Gate, error) {
	var updated *gatingv1alpha1.Gate
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		g, err := gates.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		next := g.DeepCopy()
		if change.For > 0 {
			next.Spec.Override = gate.NewOverride(g.Spec, change.State(), change.Until(now), change.Message, now)
		} else {
			next.Spec.Closed, next.Spec.Message, next.Spec.Override = !change.Open, change.Message, nil
		}
		updated, err = gates.Update(ctx, next, metav1.UpdateOptions{FieldManager: fieldManager})
		return err
	})
	return updated, err
}
