package manager_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/sluicehq/sluice/testenv"
)

// A long-lived object gets far more than 25 Events with distinct reasons or messages (one per
// promotion, per environment): every one lands. client-go's default correlator keeps 25 per
// object, then one every 5 minutes, and folds the 10th distinct message of a reason into one.
func TestDistinctEventsOnOneObjectAllLand(t *testing.T) {
	testenv.SkipIfShort(t)
	run := startManager(t, "events-test", nil, nil)
	ns := newNamespace(t)
	createGate(t, ns, "busy", nil)
	gate, err := env.Sluice.GatingV1alpha1().Gates(ns).Get(context.Background(), "busy", metav1.GetOptions{})
	require.NoError(t, err)
	// Run has started sending Events to the API server.
	testenv.WaitFor(t, 20*time.Second, func() (bool, error) { return run.m.Leading(), nil }, "leading")

	const distinct = 40
	for i := range distinct {
		// One reason for all, as a promoter's PromotionCompleted: only the message differs.
		run.m.Recorder.Eventf(gate, corev1.EventTypeNormal, "PromotionCompleted", "promotion %d reached prod", i)
	}
	const repeats = 5
	for range repeats {
		run.m.Recorder.Event(gate, corev1.EventTypeWarning, "WindowClosed", "the window is closed")
	}

	var events []corev1.Event
	err = testenv.Wait(context.Background(), 30*time.Second, func(ctx context.Context) (bool, error) {
		list, err := env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "busy").String(),
		})
		if err != nil {
			return false, err
		}
		events = list.Items
		return countOf(events, "WindowClosed") == repeats && len(events) == distinct+1, nil
	})
	require.NoError(t, err, "%d Events landed: %v", len(events), messages(events))
	seen := map[string]bool{}
	for _, e := range events {
		seen[e.Message] = true
	}
	for i := range distinct {
		assert.True(t, seen[fmt.Sprintf("promotion %d reached prod", i)], "promotion %d", i)
	}
}

// countOf is the count of the Event with reason, which repeats of one exact Event increment.
func countOf(events []corev1.Event, reason string) int32 {
	for _, e := range events {
		if e.Reason == reason {
			return e.Count
		}
	}
	return 0
}

func messages(events []corev1.Event) []string {
	out := make([]string, 0, len(events))
	for _, e := range events {
		out = append(out, fmt.Sprintf("%s x%d: %s", e.Reason, e.Count, e.Message))
	}
	return out
}
