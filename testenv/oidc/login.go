package oidc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// authRequestField is the hidden field of the provider's login form naming the pending
// authorization request.
var authRequestField = regexp.MustCompile(`name="id" value="([^"]+)"`)

// LogIn signs user in as a browser without JavaScript would: it follows start (a client's login
// URL) to the provider's login page, posts the user's name and password there, and follows the
// redirects back to the client. hc must keep cookies (a cookie jar). It returns the last
// response, whose body is unread.
func (p *Provider) LogIn(ctx context.Context, hc *http.Client, start string, user User) (*http.Response, error) {
	page, err := get(ctx, hc, start)
	if err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(page.Body)
	_ = page.Body.Close()
	m := authRequestField.FindSubmatch(body)
	if m == nil || !strings.HasPrefix(page.Request.URL.String(), p.Issuer) {
		return nil, fmt.Errorf("%s led to %s (%s), not the provider's login page", start, page.Request.URL, page.Status)
	}
	form := url.Values{"id": {string(m[1])}, "username": {user.Username}, "password": {user.Password}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.Issuer+"/login/username", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return hc.Do(req)
}

func get(ctx context.Context, hc *http.Client, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	return hc.Do(req)
}
