package web

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
)

// tokens is a TokenVerifier that knows one token.
type tokens map[string]Identity

func (t tokens) Verify(_ context.Context, raw string) (Identity, error) {
	if id, ok := t[raw]; ok {
		return id, nil
	}
	return Identity{}, errors.New("signature does not verify")
}

// proxyRequest sends a request through a Proxy's guard, on the proxy socket or from remote, and
// returns the status and the identity the handler saw.
func proxyRequest(p Proxy, onSocket bool, remote string, header http.Header) (int, Identity, bool) {
	var id Identity
	var known bool
	s := &Server{Identify: p}
	var h http.Handler = s.guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, known = p.Identify(r)
		w.WriteHeader(http.StatusOK)
	}))
	if onSocket {
		h = ViaProxySocket(h)
	}
	r := httptest.NewRequest("GET", "/pipelines", nil)
	r.RemoteAddr = remote
	r.Header = header
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, id, known
}

var sidecar = Proxy{UserHeader: "X-Forwarded-User", GroupsHeader: "X-Forwarded-Groups", AdminGroups: DefaultAdminGroups}

func TestForgedHeadersFromAnUntrustedAddressAreRefused(t *testing.T) {
	code, _, known := proxyRequest(sidecar, false, "10.1.2.3:5000", http.Header{"X-Forwarded-User": {"admin"}})
	assert.Equal(t, http.StatusForbidden, code)
	assert.False(t, known)
	code, _, known = proxyRequest(sidecar, false, "10.1.2.3:5000", http.Header{})
	assert.Equal(t, http.StatusUnauthorized, code, "no headers: anonymous, and anonymous reading is off")
	assert.False(t, known)
}

func TestForgedHeadersFromATrustedAddressNeedAVerifiedToken(t *testing.T) {
	p := sidecar
	p.Trusted = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	code, _, known := proxyRequest(p, false, "10.0.0.7:5000", http.Header{"X-Forwarded-User": {"admin"}})
	assert.Equal(t, http.StatusForbidden, code, "an address alone is never believed")
	assert.False(t, known)

	p.Verifier = tokens{"good": {User: "alice", Groups: []string{"devs"}}}
	code, _, known = proxyRequest(p, false, "10.0.0.7:5000", http.Header{"X-Forwarded-User": {"admin"}, "Authorization": {"Bearer forged"}})
	assert.Equal(t, http.StatusUnauthorized, code, "a token that does not verify")
	assert.False(t, known)
	code, _, _ = proxyRequest(p, false, "10.0.0.7:5000", http.Header{"Authorization": {"Bearer good", "Bearer good"}})
	assert.Equal(t, http.StatusBadRequest, code, "an appended token")
	code, id, known := proxyRequest(p, false, "10.0.0.7:5000", http.Header{"X-Forwarded-User": {"admin"}, "X-Forwarded-Groups": {"ops"}, "Authorization": {"Bearer good"}})
	assert.Equal(t, http.StatusOK, code)
	assert.True(t, known)
	assert.Equal(t, Identity{User: "alice", Groups: []string{"devs"}, Impersonate: true}, id, "the token alone names the person; identity headers are never read")
	code, _, known = proxyRequest(p, false, "192.0.2.1:5000", http.Header{"X-Forwarded-User": {"alice"}, "Authorization": {"Bearer good"}})
	assert.Equal(t, http.StatusUnauthorized, code, "a good token from outside the proxy's addresses is not the proxy: anonymous, and anonymous reading is off")
	assert.False(t, known)
	_, id, known = proxyRequest(p, true, "@", http.Header{"Authorization": {"Bearer good"}})
	assert.True(t, known, "the proxy's socket is the proxy's too")
	assert.Equal(t, "alice", id.User)
	_, _, known = proxyRequest(p, true, "@", http.Header{"X-Forwarded-User": {"alice"}})
	assert.False(t, known, "with a verifier even the socket's headers name nobody")

	p.Trusted = nil
	_, id, known = proxyRequest(p, false, "192.0.2.1:5000", http.Header{"Authorization": {"Bearer good"}})
	assert.True(t, known, "without --trusted-proxies the verified token is believed from anywhere")
	assert.Equal(t, "alice", id.User)
}

func TestDuplicatedIdentityHeadersAreRefused(t *testing.T) {
	code, _, known := proxyRequest(sidecar, true, "@", http.Header{"X-Forwarded-User": {"alice", "admin"}})
	assert.Equal(t, http.StatusBadRequest, code, "two users")
	assert.False(t, known)
	code, _, _ = proxyRequest(sidecar, true, "@", http.Header{"X-Forwarded-User": {"alice"}, "X-Forwarded-Groups": {"devs", "devs,release-managers"}})
	assert.Equal(t, http.StatusBadRequest, code, "an appended group header that adds a group")
	code, id, known := proxyRequest(sidecar, true, "@", http.Header{"X-Forwarded-User": {"alice"}, "X-Forwarded-Groups": {"devs, ops", "devs,ops"}})
	assert.Equal(t, http.StatusOK, code, "repeated group headers that agree")
	assert.True(t, known)
	assert.Equal(t, Identity{User: "alice", Groups: []string{"devs", "ops"}, Impersonate: true}, id)
}

func TestSystemAndAdminGroupsAreRefused(t *testing.T) {
	for _, groups := range []string{"system:masters", "devs,kubeadm:cluster-admins", "cluster-admins"} {
		code, _, known := proxyRequest(sidecar, true, "@", http.Header{"X-Forwarded-User": {"bob"}, "X-Forwarded-Groups": {groups}})
		assert.Equal(t, http.StatusForbidden, code, groups)
		assert.False(t, known, groups)
	}
	code, _, _ := proxyRequest(sidecar, true, "@", http.Header{"X-Forwarded-User": {"system:serviceaccount:kube-system:x"}})
	assert.Equal(t, http.StatusForbidden, code, "a system: user")

	allowed := sidecar
	allowed.AllowedGroups = []string{"kubeadm:cluster-admins"}
	code, id, known := proxyRequest(allowed, true, "@", http.Header{"X-Forwarded-User": {"bob"}, "X-Forwarded-Groups": {"kubeadm:cluster-admins"}})
	assert.Equal(t, http.StatusOK, code, "an admin group the operator allows")
	assert.True(t, known)
	assert.Equal(t, []string{"kubeadm:cluster-admins"}, id.Groups)
	code, _, _ = proxyRequest(allowed, true, "@", http.Header{"X-Forwarded-User": {"bob"}, "X-Forwarded-Groups": {"system:masters"}})
	assert.Equal(t, http.StatusForbidden, code, "system: groups even so")
}
