package github

import (
	"fmt"
	"net/http"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/internal/ghpayload"
	"github.com/sluicehq/sluice/pkg/scm/webhook"
)

// Webhook headers GitHub sends.
const (
	SignatureHeader = "X-Hub-Signature-256"
	EventHeader     = "X-GitHub-Event"
)

// VerifyWebhook implements scm.Webhooks: an HMAC-SHA256 of the body in X-Hub-Signature-256.
func (p *Provider) VerifyWebhook(header http.Header, body []byte) error {
	return verifyWebhook(p.webhookSecret, header, body)
}

func verifyWebhook(secret []byte, header http.Header, body []byte) error {
	if err := webhook.VerifyHMACSHA256(secret, body, header.Get(SignatureHeader), "sha256="); err != nil {
		return fmt.Errorf("github webhook: %w", err)
	}
	return nil
}

// ParseWebhook implements scm.Webhooks.
func (p *Provider) ParseWebhook(header http.Header, body []byte) (*scm.Event, error) {
	return parseWebhook(header.Get(EventHeader), body)
}

// dialect is GitHub's own: it sends "synchronize", flags deleted refs and pings new hooks.
var dialect = ghpayload.Dialect{Provider: Name, SynchronizeAction: "synchronize", PushDeletedFlag: true, Ping: true}

func parseWebhook(event string, body []byte) (*scm.Event, error) {
	return dialect.Parse(event, body)
}
