package web

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// TokenVerifier verifies an ID token an authenticating proxy forwards, against its issuer, and
// returns the person it names: auth.TokenVerifier (--oidc-issuer-url).
type TokenVerifier interface {
	Verify(ctx context.Context, rawIDToken string) (Identity, error)
}

// DefaultAdminGroups are groups that commonly hold cluster-admin without the system: prefix.
var DefaultAdminGroups = []string{"kubeadm:cluster-admins", "cluster-admins", "cluster-admin"}

// refusal is why a request's identity headers are refused, and with which status.
type refusal struct {
	status int
	reason string
}

// admit answers a request whose identity headers are refused.
func (p Proxy) admit(w http.ResponseWriter, r *http.Request) bool {
	if _, _, refused := p.resolve(r); refused != nil {
		http.Error(w, refused.reason, refused.status)
		return false
	}
	return true
}

// resolve tells who r comes from: the person the proxy names, anonymous (false), or a refusal.
// With a Verifier the verified ID token alone names the person and identity headers are never
// read; without one, only the headers of requests on the proxy's socket are.
func (p Proxy) resolve(r *http.Request) (Identity, bool, *refusal) {
	names := len(r.Header.Values(p.UserHeader)) > 0 || (p.GroupsHeader != "" && len(r.Header.Values(p.GroupsHeader)) > 0)
	switch {
	case p.Verifier != nil && (len(p.Trusted) == 0 || cameOnProxySocket(r.Context()) || p.trusted(r.RemoteAddr)):
		return p.fromToken(r)
	case p.Verifier != nil:
		return Identity{}, false, nil
	case cameOnProxySocket(r.Context()):
		return p.fromHeaders(r)
	case names:
		return Identity{}, false, &refusal{http.StatusForbidden, fmt.Sprintf("identity headers (%s) are accepted only from the authenticating proxy; this request did not come through it", p.UserHeader)}
	}
	return Identity{}, false, nil
}

// fromHeaders reads the user and groups the proxy names: exactly one user header, and group
// headers that agree.
func (p Proxy) fromHeaders(r *http.Request) (Identity, bool, *refusal) {
	users := r.Header.Values(p.UserHeader)
	if len(users) > 1 {
		return Identity{}, false, &refusal{http.StatusBadRequest, fmt.Sprintf("more than one %s header: the proxy must replace it, not append to it", p.UserHeader)}
	}
	if len(users) == 0 || strings.TrimSpace(users[0]) == "" {
		return Identity{}, false, nil
	}
	id := Identity{User: strings.TrimSpace(users[0]), Impersonate: true}
	if p.GroupsHeader != "" {
		var agreed []string
		for i, v := range r.Header.Values(p.GroupsHeader) {
			groups := splitGroups(v)
			if i > 0 && !slices.Equal(groups, agreed) {
				return Identity{}, false, &refusal{http.StatusBadRequest, fmt.Sprintf("%s headers that disagree: the proxy must replace them, not append to them", p.GroupsHeader)}
			}
			agreed = groups
		}
		id.Groups = agreed
	}
	return p.check(id)
}

// fromToken believes the person of the one verified ID token; without a token the request is
// anonymous, and a repeated or failing one is refused.
func (p Proxy) fromToken(r *http.Request) (Identity, bool, *refusal) {
	values := r.Header.Values(p.tokenHeader())
	if len(values) == 0 {
		return Identity{}, false, nil
	}
	if len(values) > 1 {
		return Identity{}, false, &refusal{http.StatusBadRequest, fmt.Sprintf("more than one %s header: the proxy must replace it, not append to it", p.tokenHeader())}
	}
	raw, ok := strings.CutPrefix(values[0], "Bearer ")
	if !ok || strings.TrimSpace(raw) == "" {
		return Identity{}, false, &refusal{http.StatusUnauthorized, "the proxy forwarded no ID token (Authorization: Bearer)"}
	}
	id, err := p.Verifier.Verify(r.Context(), strings.TrimSpace(raw))
	if err != nil {
		return Identity{}, false, &refusal{http.StatusUnauthorized, "the proxy's ID token is not valid: " + err.Error()}
	}
	id.Impersonate = true
	return p.check(id)
}

func (p Proxy) tokenHeader() string {
	if p.TokenHeader != "" {
		return p.TokenHeader
	}
	return "Authorization"
}

// check refuses system: users and groups, and admin groups not allowed.
func (p Proxy) check(id Identity) (Identity, bool, *refusal) {
	if strings.HasPrefix(id.User, "system:") {
		return Identity{}, false, &refusal{http.StatusForbidden, "the UI never acts as a system: user"}
	}
	for _, g := range id.Groups {
		if strings.HasPrefix(g, "system:") {
			return Identity{}, false, &refusal{http.StatusForbidden, fmt.Sprintf("the UI never acts in the group %s (system: groups are refused)", g)}
		}
		if slices.Contains(p.AdminGroups, g) && !slices.Contains(p.AllowedGroups, g) {
			return Identity{}, false, &refusal{http.StatusForbidden, fmt.Sprintf("the UI does not act in the admin group %s unless it is allowed (--proxy-allowed-admin-groups)", g)}
		}
	}
	return id, true, nil
}

func splitGroups(v string) []string {
	var out []string
	for _, g := range strings.Split(v, ",") {
		if g = strings.TrimSpace(g); g != "" {
			out = append(out, g)
		}
	}
	return out
}
