package gitea

import (
	"context"
	"net/http"
	"strings"
)

// Remote is a Gitea that runs elsewhere, such as in a pod of the end-to-end suite's cluster:
// its admin user exists, and Remote creates the admin's API token with the password, so API,
// CreateRepo and Token work as on a server Start made. client carries the TLS trust for an
// https URL. Close does nothing: the server belongs to whoever started it.
func Remote(ctx context.Context, url, adminUser, adminPassword string, client *http.Client) (*Server, error) {
	s := &Server{URL: strings.TrimSuffix(url, "/"), AdminUser: adminUser, AdminPassword: adminPassword, http: client}
	token, err := s.createToken(ctx)
	if err != nil {
		return nil, err
	}
	s.Token = token
	return s, nil
}
