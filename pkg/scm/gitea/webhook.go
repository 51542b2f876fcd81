package gitea

import (
	"fmt"
	"net/http"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/internal/ghpayload"
	"github.com/sluicehq/sluice/pkg/scm/webhook"
)

// Webhook headers. Forgejo sends its own names and, for compatibility, Gitea's.
const (
	SignatureHeader        = "X-Gitea-Signature"
	EventHeader            = "X-Gitea-Event"
	ForgejoSignatureHeader = "X-Forgejo-Signature"
	ForgejoEventHeader     = "X-Forgejo-Event"
)

// VerifyWebhook implements scm.Webhooks: a hex HMAC-SHA256 of the body, without prefix.
func (p *Provider) VerifyWebhook(header http.Header, body []byte) error {
	return verifyWebhook(p.name, p.webhookSecret, header, body)
}

func verifyWebhook(name string, secret []byte, header http.Header, body []byte) error {
	sig := header.Get(SignatureHeader)
	if name == ForgejoName && header.Get(ForgejoSignatureHeader) != "" {
		sig = header.Get(ForgejoSignatureHeader)
	}
	if err := webhook.VerifyHMACSHA256(secret, body, sig, ""); err != nil {
		return fmt.Errorf("%s webhook: %w", name, err)
	}
	return nil
}

// ParseWebhook implements scm.Webhooks.
func (p *Provider) ParseWebhook(header http.Header, body []byte) (*scm.Event, error) {
	event := header.Get(EventHeader)
	if p.name == ForgejoName && header.Get(ForgejoEventHeader) != "" {
		event = header.Get(ForgejoEventHeader)
	}
	return parseWebhook(p.name, event, body)
}

// parseWebhook reads Gitea's payloads, which are GitHub's but for the "synchronized" action, no
// deleted flag and owners named by username.
func parseWebhook(provider, event string, body []byte) (*scm.Event, error) {
	d := ghpayload.Dialect{Provider: provider, SynchronizeAction: "synchronized", OwnerUserName: true}
	return d.Parse(event, body)
}
