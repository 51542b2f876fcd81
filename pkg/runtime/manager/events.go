package manager

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// newEventBroadcaster keys client-go's Event correlator by reason and message as well as by
// object. Its defaults key the spam filter by object alone (25 Events, then one every 5 minutes)
// and fold the 10th distinct message of a reason into "(combined from similar events)", so a
// strategy that promotes a few times an hour would lose its PromotionCompleted Events for good.
// Repeats of one exact Event are still counted on one Event object, and still rate limited.
func newEventBroadcaster() record.EventBroadcaster {
	return record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{
		SpamKeyFunc: eventIdentity,
		KeyFunc: func(e *corev1.Event) (string, string) {
			// One aggregate group per distinct Event: nothing distinct is ever folded together.
			return eventIdentity(e), e.Message
		},
	}))
}

// eventIdentity is what tells two Events apart: their source, object, type, reason and message.
func eventIdentity(e *corev1.Event) string {
	return strings.Join([]string{
		e.Source.Component, e.Source.Host,
		e.InvolvedObject.APIVersion, e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name,
		string(e.InvolvedObject.UID), e.Type, e.Reason, e.Message,
	}, "\x00")
}
