package web

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	writes "github.com/sluicehq/sluice/pkg/actions"
)

// gateAction closes or opens a gate, with the same write as `kubectl sluice gate close|open`: by hand, or with an
// override that expires after a while and gives the gate back its state of now.
func gateAction(open bool) *action {
	verb, state, reason := "Close", gatingv1alpha1.StateClosed, "ClosedFromUI"
	if open {
		verb, state, reason = "Open", gatingv1alpha1.StateOpen, "OpenedFromUI"
	}
	return &action{
		Title: verb + " gate", Kind: "Gate", reason: reason,
		// writes.SetGate reads the gate and updates it.
		permission: needs("update", schema.GroupResource{Group: gatingv1alpha1.GroupName, Resource: "gates"}),
		Fields: []field{
			{Name: "message", Label: "Message", Help: "Why; shown on the gate and to everyone it holds."},
			{Name: "for", Label: "For (optional)", Help: "An expiry such as 30m or 2h: the gate then returns to what it is now. Empty: until someone changes it."},
		},
		back: func(_ *Server, ns, name string, _ url.Values) string { return pathOf("gates", ns, name) },
		describe: func(s *Server, ns, name string, f url.Values, now time.Time) (string, error) {
			d, err := parseFor(f.Get("for"))
			if err != nil {
				return "", err
			}
			if s.Store.Gate(ns, name) == nil {
				return "", fmt.Errorf("gate %s/%s does not exist", ns, name)
			}
			what := fmt.Sprintf("Gate %s/%s: %s", ns, name, state)
			if msg := f.Get("message"); msg != "" {
				what += fmt.Sprintf(" with the message %q", msg)
			}
			if d > 0 {
				return what + fmt.Sprintf(" by an override until %s (spec.override), then back to what it is now", now.Add(d).UTC().Truncate(time.Second).Format(time.RFC3339)), nil
			}
			return what + fmt.Sprintf(" by hand (spec.closed: %t, spec.message), until someone changes it; any override is removed", !open), nil
		},
		apply: func(ctx context.Context, c clients, ns, name string, f url.Values, now time.Time) (runtime.Object, error) {
			d, _ := parseFor(f.Get("for"))
			change := writes.GateChange{Open: open, For: d, Message: f.Get("message")}
			return writes.SetGate(ctx, c.Sluice.GatingV1alpha1().Gates(ns), name, change, now, fieldManager)
		},
	}
}

// fieldManager names the UI in managedFields: the person is named by impersonation and Events.
const fieldManager = "sluice-ui"
