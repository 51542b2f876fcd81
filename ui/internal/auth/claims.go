// Package auth signs people in to the UI with OpenID Connect, and verifies the ID tokens an
// authenticating proxy forwards. Either way the person's Kubernetes name and groups come from
// the ID token's claims, mapped as the API server's own --oidc-* flags map them, so the UI
// impersonates exactly the user kubectl would be with the same token.
//
//   - claims.go: Claims, the mapping from an ID token's claims to a web.Identity.
//   - seal.go: sealed (AES-GCM) cookie values with an expiry.
//   - login.go, session.go: the authorization code flow with PKCE, the session cookie, refresh
//     and sign-out (Login, a web.Identifier).
//   - verifier.go: TokenVerifier, for a proxy's forwarded ID token.
package auth

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/ui/internal/web"
)

// Claims names the claims a person's identity is read from, as kube-apiserver's
// --oidc-username-claim, --oidc-username-prefix, --oidc-groups-claim and --oidc-groups-prefix.
type Claims struct {
	// Issuer is the issuer URL, which the default username prefix names.
	Issuer string
	// UsernameClaim holds the user name, "sub" by default.
	UsernameClaim string
	// UsernamePrefix is put before the user name. Empty takes the API server's default: none for
	// the email claim, else the issuer URL and "#". "-" means no prefix.
	UsernamePrefix string
	// GroupsClaim holds the groups, a string or a list of strings; empty reads no groups.
	GroupsClaim string
	// GroupsPrefix is put before each group.
	GroupsPrefix string
}

// Identity maps an ID token's claims to the person to impersonate. A missing or malformed user
// name, an unverified email used as the name, and a name in the API server's reserved system:
// space are refused; a system: group is dropped. These refusals are a second line: the chart's
// RBAC bounds whom the UI may impersonate.
func (c Claims) Identity(claims map[string]any) (web.Identity, error) {
	claim := c.UsernameClaim
	if claim == "" {
		claim = "sub"
	}
	name, ok := claims[claim].(string)
	if !ok || name == "" {
		return web.Identity{}, fmt.Errorf("the ID token has no %q claim naming the user (--oidc-username-claim)", claim)
	}
	if claim == "email" {
		if verified, present := claims["email_verified"]; present && verified != true {
			return web.Identity{}, errors.New("the ID token's email is not verified")
		}
	}
	id := web.Identity{User: c.usernamePrefix(claim) + name, Impersonate: true}
	if strings.HasPrefix(id.User, "system:") {
		return web.Identity{}, fmt.Errorf("the user name %q is in the reserved system: space", id.User)
	}
	groups, err := stringsOf(claims, c.GroupsClaim)
	if err != nil {
		return web.Identity{}, err
	}
	for _, g := range groups {
		if g = c.GroupsPrefix + g; g != c.GroupsPrefix && !strings.HasPrefix(g, "system:") {
			id.Groups = append(id.Groups, g)
		}
	}
	return id, nil
}

func (c Claims) usernamePrefix(claim string) string {
	switch {
	case c.UsernamePrefix == "-":
		return ""
	case c.UsernamePrefix != "":
		return c.UsernamePrefix
	case claim == "email":
		return ""
	default:
		return c.Issuer + "#"
	}
}

// stringsOf reads a claim that is a string or a list of strings, as the API server accepts both.
func stringsOf(claims map[string]any, claim string) ([]string, error) {
	if claim == "" {
		return nil, nil
	}
	switch v := claims[claim].(type) {
	case nil:
		return nil, nil
	case string:
		return []string{v}, nil
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("the ID token's %q claim holds %v, not a string", claim, e)
			}
			out = append(out, s)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("the ID token's %q claim is neither a string nor a list of strings", claim)
	}
}
