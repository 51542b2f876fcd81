package gitea

import (
	"context"
	"net/http"
	"strings"
)

// Remote is a Gitea that runs elsewhere, such as in a pod of the end-to-end suite's cluster:
// its admin user exists, and Remote creates an API token of the admin with the password, so API,
// CreateRepo and Token work as on a server Start made. client carries the TLS trust for an
// https URL. Close does nothing: the server belongs to whoever started it.
func Remote(ctx context.Context, url, adminUser, adminPassword string, client *http.Client) (*Server, error) {
	s := &Server{URL: strings.TrimSuffix(url, "/"), AdminUser: adminUser, AdminPassword: adminPassword, http: client}
	// Token names are unique per user: another client of the same server may have made one.
	token, err := s.createToken(ctx, "sluice-remote-"+randomHex(4))
	if err != nil {
		return nil, err
	}
	s.Token = token
	return s, nil
}
