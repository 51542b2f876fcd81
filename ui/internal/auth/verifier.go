package auth

import (
	"context"
	"fmt"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/sluicehq/sluice/ui/internal/web"
)

// TokenVerifier believes an ID token an authenticating proxy forwards (oauth2-proxy's
// Authorization: Bearer with --pass-authorization-header) only once it is verified against the
// issuer: signed with one of its keys, issued to ClientID, not expired. The person is read
// from its claims, never from other headers.
type TokenVerifier struct {
	verifier *oidc.IDTokenVerifier
	claims   Claims
}

// NewTokenVerifier reads the issuer's discovery document. clientID is the proxy's client, the
// audience of the tokens it forwards.
func NewTokenVerifier(ctx context.Context, issuer, clientID string, claims Claims) (*TokenVerifier, error) {
	provider, err := oidc.NewProvider(ctx, issuer)
	if err != nil {
		return nil, fmt.Errorf("--oidc-issuer-url %s: %w", issuer, err)
	}
	return &TokenVerifier{verifier: provider.Verifier(&oidc.Config{ClientID: clientID}), claims: claims}, nil
}

// Verify returns the person rawIDToken names, or why it is not believed.
func (v *TokenVerifier) Verify(ctx context.Context, rawIDToken string) (web.Identity, error) {
	idt, err := v.verifier.Verify(ctx, rawIDToken)
	if err != nil {
		return web.Identity{}, err
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return web.Identity{}, err
	}
	return v.claims.Identity(claims)
}
