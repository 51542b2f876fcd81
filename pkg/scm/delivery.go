package scm

import (
	"errors"
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/pkg/scm/webhook"
)

// WebhookPath is where Sluice's webhook receivers (the promoter's, for pushes and pull requests;
// the commitstatus-controller's, for statuses) listen: POST /hooks/<namespace>/<scmprovider>.
const WebhookPath = "/hooks/"

// WebhookTarget returns the namespace and name of the ScmProvider a delivery is addressed to, read
// from its path, POST WebhookPath<namespace>/<scmprovider>. Any other request it answers (405 or
// 404), and returns false.
func WebhookTarget(w http.ResponseWriter, req *http.Request) (namespace, provider string, ok bool) {
	if req.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return "", "", false
	}
	parts := strings.Split(strings.TrimPrefix(req.URL.Path, WebhookPath), "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		http.Error(w, "use "+WebhookPath+"<namespace>/<scmprovider>", http.StatusNotFound)
		return "", "", false
	}
	return parts[0], parts[1], true
}

// Refusal is why a webhook receiver did not take a delivery, in one word for its metrics.
type Refusal string

const (
	// Accepted: the delivery is verified and read.
	Accepted Refusal = ""
	// RefusedUnverified: not signed with the ScmProvider's webhook secret (401).
	RefusedUnverified Refusal = "unverified"
	// RefusedTooLarge: larger than webhook.DefaultMaxBodyBytes (413).
	RefusedTooLarge Refusal = "too-large"
	// RefusedMalformed: signed, but its payload cannot be read (400); the sender is at fault.
	RefusedMalformed Refusal = "malformed"
)

// VerifyDelivery reads, verifies with sp and parses one delivery (ReceiveWebhook). A delivery
// that is refused it answers, with a status and a message that say why and name nothing of the
// secret, and returns the Refusal.
func VerifyDelivery(w http.ResponseWriter, req *http.Request, sp Webhooks) (*Event, Refusal) {
	ev, err := ReceiveWebhook(sp, req, 0)
	switch {
	case err == nil:
		return ev, Accepted
	case errors.Is(err, ErrMalformedWebhook):
		http.Error(w, "signed, but the payload cannot be read as an event of this SCM", http.StatusBadRequest)
		return nil, RefusedMalformed
	case errors.Is(err, webhook.ErrTooLarge):
		http.Error(w, "delivery too large", http.StatusRequestEntityTooLarge)
		return nil, RefusedTooLarge
	default:
		http.Error(w, "delivery refused", http.StatusUnauthorized)
		return nil, RefusedUnverified
	}
}
