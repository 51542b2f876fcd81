package web

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Identity is the person a request comes from, as Kubernetes knows them.
type Identity struct {
	User   string
	Groups []string
	// Impersonate is set when actions must impersonate User and Groups (in a cluster); unset,
	// they run with the kubeconfig the UI was started with, which is the caller's own (local mode).
	Impersonate bool
}

// Identifier tells who sent a request.
type Identifier interface {
	// Identify returns the request's identity, or false for an anonymous request, which never acts.
	Identify(r *http.Request) (Identity, bool)
	// AllowsHost reports whether the UI answers requests for host (DNS rebinding: a local UI
	// must not answer a page of another site that resolves its name to 127.0.0.1).
	AllowsHost(host string) bool
}

// Local is the identity of local mode: whoever runs sluice-ui with their kubeconfig. Requests
// are that person's only when they are addressed to the loopback host the UI listens on and
// carry the launch token (local_token.go).
type Local struct {
	// User is the kubeconfig's user, as the API server names it (a SelfSubjectReview).
	User string
	// Token is the launch's secret (NewLaunchToken): only a browser that presents it is let in,
	// so no other local user or process acts with the kubeconfig through the loopback port.
	Token string
}

// Identify returns the kubeconfig's user.
func (l Local) Identify(*http.Request) (Identity, bool) { return Identity{User: l.User}, true }

// AllowsHost accepts localhost and loopback addresses only.
func (l Local) AllowsHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// Proxy names the person an authenticating proxy in front of the UI signed in. With Verifier
// (--oidc-issuer-url), the ID token the proxy forwards (oauth2-proxy's Authorization: Bearer) is
// verified against the issuer and alone names the person, from anywhere or, with Trusted, from
// those addresses and the proxy's socket only; identity headers are never read. Without one,
// the user and groups headers (oauth2-proxy's X-Forwarded-User and X-Forwarded-Groups) are
// believed only on requests served by ViaProxySocket (a sidecar proxy's Unix socket, which only
// containers of the UI's pod can reach); headers anywhere else are refused. A request naming
// nobody is anonymous. The checks are in proxy_headers.go.
type Proxy struct {
	UserHeader, GroupsHeader string
	Trusted                  []netip.Prefix
	// Verifier verifies the ID token the proxy forwards (TokenHeader, a bearer token); nil,
	// only the socket's headers name anyone.
	Verifier    TokenVerifier
	TokenHeader string
	// AdminGroups are refused as groups unless listed in AllowedGroups: RBAC bounds whom the
	// UI may impersonate, and this is the second line. system: groups are always refused.
	AdminGroups, AllowedGroups []string
}

// Identify returns the proxy's user, or false.
func (p Proxy) Identify(r *http.Request) (Identity, bool) {
	id, known, refused := p.resolve(r)
	return id, known && refused == nil
}

type proxySocketKey struct{}

// ViaProxySocket serves h for the connections of the proxy's Unix socket: Proxy believes the
// identity headers of these requests. Wrap only the socket's server with it; a request cannot
// set a context value, so nothing that arrives on another listener passes for the proxy.
func ViaProxySocket(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), proxySocketKey{}, true)))
	})
}

func cameOnProxySocket(ctx context.Context) bool {
	v, _ := ctx.Value(proxySocketKey{}).(bool)
	return v
}

func (p Proxy) trusted(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	for _, prefix := range p.Trusted {
		if prefix.Contains(ip) {
			return true
		}
	}
	return false
}

// AllowsHost accepts any host: the proxy decides who reaches the UI.
func (Proxy) AllowsHost(string) bool { return true }

// Anonymous is the read-only UI of a cluster without an authenticating proxy.
type Anonymous struct{}

// Identify never names anyone.
func (Anonymous) Identify(*http.Request) (Identity, bool) { return Identity{}, false }

// AllowsHost accepts any host.
func (Anonymous) AllowsHost(string) bool { return true }
