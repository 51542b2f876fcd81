package gatecli

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	gatingclient "github.com/sluicehq/sluice/api/generated/clientset/versioned/typed/gating/v1alpha1"
)

// pollInterval is how often a waiting command reads the object again.
const pollInterval = 200 * time.Millisecond

// poll calls check until it reports done or timeout passes. Errors from check (the API server
// slow, the client's rate limiter refusing to wait past the deadline) only mean "not yet": the
// change is applied already, so they never turn into a failure. It returns the last error seen.
func poll(ctx context.Context, timeout time.Duration, check func(context.Context) (bool, error)) (bool, error) {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		done, err := check(ctx)
		if err == nil && done {
			return true, nil
		}
		if err != nil {
			last = err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false, last
		}
		select {
		case <-ctx.Done():
			return false, last
		case <-time.After(min(pollInterval, left)):
		}
	}
}

// confirm waits until the gate-controller has evaluated the generation of g, then prints the
// state. It reports false, having said why, when the change is applied but not (yet) in effect.
func (o *options) confirm(ctx context.Context, gates gatingclient.GateInterface, g *gatingv1alpha1.Gate, timeout time.Duration) bool {
	generation := g.Generation
	evaluated := func(g *gatingv1alpha1.Gate) bool { return g.Status.ObservedGeneration >= generation }
	if timeout == 0 {
		fmt.Fprintf(o.Out, "%s applied; not waiting for the gate-controller (--wait 0)\n", o.gateName(g))
		return true
	}
	var lastErr error
	if !evaluated(g) {
		_, lastErr = poll(ctx, timeout, func(ctx context.Context) (bool, error) {
			latest, err := gates.Get(ctx, g.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			g = latest
			return evaluated(g), nil
		})
	}
	switch {
	case !evaluated(g):
		why := "is it running?"
		if lastErr != nil {
			why = "last error: " + lastErr.Error()
		}
		fmt.Fprintf(o.Out, "%s applied, but not yet confirmed: the gate-controller has not evaluated it within %s (%s); check with %s\n",
			o.gateName(g), timeout, why, o.hint(g.Namespace, "list"))
		return false
	case g.Status.Reason == gatingv1alpha1.ReasonSuspended:
		fmt.Fprintf(o.Out, "%s applied, but the gate is suspended and keeps its state, %s: %s; resume it with %s\n",
			o.gateName(g), stateName(g), g.Status.Message, o.hint(g.Namespace, "resume gate/"+g.Name))
		return false
	}
	fmt.Fprintf(o.Out, "%s %s (%s): %s\n", o.gateName(g), stateName(g), g.Status.Reason, g.Status.Message)
	return true
}

func stateName(g *gatingv1alpha1.Gate) string {
	if meta.FindStatusCondition(g.Status.Conditions, gatingv1alpha1.ConditionOpen) == nil {
		return "not evaluated"
	}
	if g.Status.Open {
		return "open"
	}
	return "closed"
}

// gateName names a gate in the command's output; with -A, with its namespace.
func (o *options) gateName(g *gatingv1alpha1.Gate) string {
	if o.allNamespaces {
		return g.Namespace + " gate/" + g.Name
	}
	return "gate/" + g.Name
}
