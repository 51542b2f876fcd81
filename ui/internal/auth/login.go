package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Paths Login serves, besides the callback (the path of Config.RedirectURL).
const (
	loginPath     = "/oidc/login"
	logoutPath    = "/oidc/logout"
	signedOutPath = "/oidc/signed-out"
	// loginTimeout bounds the time between leaving for the provider and coming back.
	loginTimeout = 10 * time.Minute
)

// Config configures Login.
type Config struct {
	IssuerURL    string
	ClientID     string
	ClientSecret string
	// RedirectURL is the UI's callback as registered with the provider, such as
	// https://sluice.example.com/oidc/callback; https makes the cookies Secure.
	RedirectURL string
	Scopes      []string
	Claims      Claims
	// CookieKey seals the cookies (at least MinKeyBytes bytes).
	CookieKey []byte
	// SessionTTL is how long a session is believed before the refresh token confirms it again.
	SessionTTL time.Duration
	// SessionMaxAge ends a session, refreshed or not.
	SessionMaxAge time.Duration
}

// Login signs people in with the authorization code flow and PKCE, keeps who they are in a
// sealed session cookie, refreshes it and signs them out. It is the web.Identifier of OIDC mode.
type Login struct {
	cfg        Config
	oauth      oauth2.Config
	verifier   *oidc.IDTokenVerifier
	sealer     *sealer
	secure     bool
	callback   string
	endSession string
	signedOut  string
	refreshes  refreshes
	log        *slog.Logger
	now        func() time.Time
}

// NewLogin reads the provider's discovery document and builds the login.
func NewLogin(ctx context.Context, cfg Config, log *slog.Logger) (*Login, error) {
	provider, err := oidc.NewProvider(ctx, cfg.IssuerURL)
	if err != nil {
		return nil, fmt.Errorf("--oidc-issuer-url %s: %w", cfg.IssuerURL, err)
	}
	redirect, err := url.Parse(cfg.RedirectURL)
	if err != nil || redirect.Path == "" || redirect.Host == "" {
		return nil, fmt.Errorf("--oidc-redirect-url %q is not an absolute URL with a path", cfg.RedirectURL)
	}
	s, err := newSealer(cfg.CookieKey)
	if err != nil {
		return nil, err
	}
	var discovered struct {
		EndSession string `json:"end_session_endpoint"`
	}
	_ = provider.Claims(&discovered)
	l := &Login{
		cfg: cfg,
		oauth: oauth2.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, Endpoint: provider.Endpoint(),
			RedirectURL: cfg.RedirectURL, Scopes: cfg.Scopes},
		verifier:   provider.Verifier(&oidc.Config{ClientID: cfg.ClientID}),
		sealer:     s,
		secure:     redirect.Scheme == "https",
		callback:   redirect.Path,
		endSession: discovered.EndSession,
		signedOut:  (&url.URL{Scheme: redirect.Scheme, Host: redirect.Host, Path: signedOutPath}).String(),
		log:        log,
		now:        time.Now,
	}
	return l, nil
}

// Wrap serves the login's own paths, and hands every other request to next with the person
// its session names. Without a session a page is sent to sign in first, and anything else is
// refused: in OIDC mode nobody reads anonymously.
func (l *Login) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case loginPath:
			l.serveLogin(w, r)
			return
		case l.callback:
			l.serveCallback(w, r)
			return
		case logoutPath:
			l.serveLogout(w, r)
			return
		case signedOutPath:
			page(w, http.StatusOK, `You have signed out of Sluice. <a href="`+loginPath+`">Sign in again</a>.`)
			return
		}
		if id, ok := l.current(w, r); ok {
			next.ServeHTTP(w, r.WithContext(withIdentity(r.Context(), id)))
			return
		}
		switch {
		case strings.HasPrefix(r.URL.Path, "/assets/"):
			next.ServeHTTP(w, r)
		case r.Method == http.MethodGet && r.URL.Path != "/events":
			http.Redirect(w, r, loginPath+"?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusFound)
		default:
			http.Error(w, "sign in first: "+loginPath, http.StatusUnauthorized)
		}
	})
}

// pending is what the login cookie holds while the person is at the provider.
type pending struct {
	State    string `json:"s"`
	Verifier string `json:"v"`
	Nonce    string `json:"n"`
	Next     string `json:"p"`
}

func (l *Login) serveLogin(w http.ResponseWriter, r *http.Request) {
	p := pending{State: random(), Verifier: oauth2.GenerateVerifier(), Nonce: random(), Next: localPath(r.URL.Query().Get("next"))}
	until := l.now().Add(loginTimeout)
	value, err := l.sealer.seal(loginCookie, p, until)
	if err != nil {
		http.Error(w, "cannot start signing in", http.StatusInternalServerError)
		return
	}
	http.SetCookie(w, l.cookie(loginCookie, l.callback, value, until))
	http.Redirect(w, r, l.oauth.AuthCodeURL(p.State, oauth2.S256ChallengeOption(p.Verifier), oidc.Nonce(p.Nonce)), http.StatusFound)
}

func (l *Login) serveCallback(w http.ResponseWriter, r *http.Request) {
	var p pending
	c, err := r.Cookie(loginCookie)
	if err == nil {
		err = l.sealer.open(loginCookie, c.Value, l.now(), &p)
	}
	http.SetCookie(w, l.cookie(loginCookie, l.callback, "", l.now()))
	q := r.URL.Query()
	switch {
	case err != nil:
		page(w, http.StatusBadRequest, `Signing in took too long, or began in another browser. <a href="`+loginPath+`">Sign in again</a>.`)
		return
	case q.Get("error") != "":
		page(w, http.StatusForbidden, "The identity provider refused: "+html.EscapeString(q.Get("error")+" "+q.Get("error_description")))
		return
	case subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(p.State)) != 1:
		page(w, http.StatusBadRequest, `This sign-in answer is not the one this browser asked for. <a href="`+loginPath+`">Sign in again</a>.`)
		return
	}
	tok, err := l.oauth.Exchange(r.Context(), q.Get("code"), oauth2.VerifierOption(p.Verifier))
	if err != nil {
		l.log.Info("the provider refused a sign-in code", "error", err)
		page(w, http.StatusBadGateway, `The identity provider did not accept this sign-in. <a href="`+loginPath+`">Sign in again</a>.`)
		return
	}
	now := l.now()
	s, err := l.sessionFrom(r.Context(), tok, p.Nonce, now.Add(l.cfg.SessionMaxAge).Unix())
	if err != nil {
		l.log.Info("a sign-in was refused", "error", err)
		page(w, http.StatusForbidden, "Sluice cannot act for this account: "+html.EscapeString(err.Error()))
		return
	}
	if err := l.setSession(w, s); err != nil {
		http.Error(w, "cannot keep the session", http.StatusInternalServerError)
		return
	}
	l.log.Info("signed in", "user", s.User, "groups", s.Groups)
	http.Redirect(w, r, p.Next, http.StatusSeeOther)
}

// sessionFrom verifies the ID token of tok (its nonce too, unless nonce is empty, as on a
// refresh) and maps its claims to a session ending at until.
func (l *Login) sessionFrom(ctx context.Context, tok *oauth2.Token, nonce string, until int64) (session, error) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return session{}, errors.New("the provider answered without an ID token (is the openid scope asked for?)")
	}
	idt, err := l.verifier.Verify(ctx, raw)
	if err != nil {
		return session{}, err
	}
	if nonce != "" && subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		return session{}, errors.New("the ID token's nonce is not the one this sign-in sent")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return session{}, err
	}
	id, err := l.cfg.Claims.Identity(claims)
	if err != nil {
		return session{}, err
	}
	refresh := min(idt.Expiry.Unix(), l.now().Add(l.cfg.SessionTTL).Unix(), until)
	return session{User: id.User, Groups: id.Groups, IDToken: raw, RefreshToken: tok.RefreshToken, Refresh: refresh, Until: until}, nil
}

// refresh confirms s with its refresh token and returns the session that follows it.
func (l *Login) refresh(ctx context.Context, s session) (session, error) {
	if s.RefreshToken == "" {
		return session{}, errors.New("the session has no refresh token (is offline_access among the scopes?)")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tok, err := l.oauth.TokenSource(ctx, &oauth2.Token{RefreshToken: s.RefreshToken}).Token()
	if err != nil {
		return session{}, err
	}
	return l.sessionFrom(ctx, tok, "", s.Until)
}

// serveLogout clears the session and ends the provider's too, when it offers that. It takes a
// POST from a page of this UI only, so another site cannot sign a person out.
func (l *Login) serveLogout(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !sameOrigin(r) {
		http.Error(w, "sign out with the button on a page of this UI", http.StatusMethodNotAllowed)
		return
	}
	var s session
	if c, err := r.Cookie(sessionCookie); err == nil {
		_ = l.sealer.open(sessionCookie, c.Value, l.now(), &s)
	}
	http.SetCookie(w, l.cookie(sessionCookie, "/", "", l.now()))
	if l.endSession == "" {
		http.Redirect(w, r, signedOutPath, http.StatusSeeOther)
		return
	}
	q := url.Values{"client_id": {l.cfg.ClientID}, "post_logout_redirect_uri": {l.signedOut}}
	if s.IDToken != "" {
		q.Set("id_token_hint", s.IDToken)
	}
	sep := "?"
	if strings.Contains(l.endSession, "?") {
		sep = "&"
	}
	// A page that moves on, not a redirect: the UI's pages allow forms to post to this origin
	// only (CSP form-action), which browsers apply to a form's redirects too.
	end := html.EscapeString(l.endSession + sep + q.Encode())
	w.Header().Set("Referrer-Policy", "no-referrer")
	page(w, http.StatusOK, `<meta http-equiv="refresh" content="0;url=`+end+`">Signing out of the identity provider… <a id="end-session" href="`+end+`">Continue</a>`)
}

// sameOrigin reports whether a browser says the request came from a page of this origin.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin"
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

// localPath returns next if it is a path of this UI, else "/": after signing in, a person is
// never sent to another site.
func localPath(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(next, "/") ||
		strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/"
	}
	return u.RequestURI()
}

func random() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// page answers with a short HTML message; callers escape what they did not write.
func page(w http.ResponseWriter, status int, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "<!doctype html><title>Sluice</title><p>%s</p>\n", body)
}
