package auth

import (
	"context"
	"crypto/sha256"
	"net/http"
	"sync"
	"time"

	"github.com/sluicehq/sluice/ui/internal/web"
)

// Cookie names. The session cookie is sent on every path; the login cookie only to the callback.
const (
	sessionCookie = "sluice_session"
	loginCookie   = "sluice_oidc_login"
	// maxCookieBytes keeps a cookie under the 4 KiB browsers store; past it the ID token, kept
	// only as the hint of the provider's sign-out, is left out.
	maxCookieBytes = 3800
)

// session is what the session cookie holds, sealed.
type session struct {
	User   string   `json:"u"`
	Groups []string `json:"g,omitempty"`
	// IDToken is the hint the provider's end_session_endpoint takes at sign-out.
	IDToken      string `json:"i,omitempty"`
	RefreshToken string `json:"r,omitempty"`
	// Refresh is when the identity must be confirmed again with the refresh token (Unix seconds):
	// the ID token's expiry, or SessionTTL after sign-in, whichever comes first.
	Refresh int64 `json:"t"`
	// Until is when the session ends whatever happens (Unix seconds): SessionMaxAge after sign-in.
	Until int64 `json:"x"`
}

func (s session) identity() web.Identity {
	return web.Identity{User: s.User, Groups: s.Groups, Impersonate: true}
}

// setSession writes s as the session cookie.
func (l *Login) setSession(w http.ResponseWriter, s session) error {
	until := time.Unix(s.Until, 0)
	value, err := l.sealer.seal(sessionCookie, s, until)
	if err == nil && len(value) > maxCookieBytes && s.IDToken != "" {
		s.IDToken = ""
		value, err = l.sealer.seal(sessionCookie, s, until)
	}
	if err != nil {
		return err
	}
	http.SetCookie(w, l.cookie(sessionCookie, "/", value, until))
	return nil
}

func (l *Login) cookie(name, path, value string, until time.Time) *http.Cookie {
	c := &http.Cookie{Name: name, Value: value, Path: path, HttpOnly: true, Secure: l.secure, SameSite: http.SameSiteLaxMode}
	if value == "" {
		c.MaxAge = -1
	} else {
		c.Expires = until
	}
	return c
}

// current returns the request's identity from its session cookie, refreshing it with the
// refresh token once it is due. A session that cannot be read or refreshed is cleared.
func (l *Login) current(w http.ResponseWriter, r *http.Request) (web.Identity, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return web.Identity{}, false
	}
	var s session
	now := l.now()
	if err := l.sealer.open(sessionCookie, c.Value, now, &s); err != nil {
		http.SetCookie(w, l.cookie(sessionCookie, "/", "", now))
		return web.Identity{}, false
	}
	if now.Before(time.Unix(s.Refresh, 0)) {
		return s.identity(), true
	}
	fresh, err := l.refreshes.do(s.RefreshToken, func() (session, error) { return l.refresh(r.Context(), s) })
	if err != nil {
		l.log.Info("a session could not be refreshed; the person signs in again", "user", s.User, "error", err)
		http.SetCookie(w, l.cookie(sessionCookie, "/", "", now))
		return web.Identity{}, false
	}
	if err := l.setSession(w, fresh); err != nil {
		l.log.Error("cannot write a refreshed session", "error", err)
	}
	return fresh.identity(), true
}

// refreshes lets the requests a page makes at once (the page, its event stream) share one
// refresh: a provider that rotates refresh tokens accepts each only once.
type refreshes struct {
	mu   sync.Mutex
	done map[[32]byte]refreshed
}

type refreshed struct {
	s   session
	err error
	at  time.Time
	wg  *sync.WaitGroup
}

// refreshMemory is how long a refresh's result answers for the refresh token it spent.
const refreshMemory = time.Minute

func (f *refreshes) do(token string, refresh func() (session, error)) (session, error) {
	key := sha256.Sum256([]byte(token))
	f.mu.Lock()
	if f.done == nil {
		f.done = map[[32]byte]refreshed{}
	}
	for k, v := range f.done {
		if v.wg == nil && time.Since(v.at) > refreshMemory {
			delete(f.done, k)
		}
	}
	if r, ok := f.done[key]; ok {
		f.mu.Unlock()
		if r.wg != nil {
			r.wg.Wait()
			f.mu.Lock()
			r = f.done[key]
			f.mu.Unlock()
		}
		return r.s, r.err
	}
	wg := &sync.WaitGroup{}
	wg.Add(1)
	f.done[key] = refreshed{wg: wg}
	f.mu.Unlock()

	s, err := refresh()
	f.mu.Lock()
	f.done[key] = refreshed{s: s, err: err, at: time.Now()}
	f.mu.Unlock()
	wg.Done()
	return s, err
}

type identityKey struct{}

func withIdentity(ctx context.Context, id web.Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// Identify returns the identity Wrap found in the request's session cookie. A request cannot
// set a context value, so only Wrap names anyone.
func (l *Login) Identify(r *http.Request) (web.Identity, bool) {
	id, ok := r.Context().Value(identityKey{}).(web.Identity)
	return id, ok
}

// AllowsHost accepts any host: the session cookie is bound to the host it was set for.
func (l *Login) AllowsHost(string) bool { return true }

// SignOutPath is where the layout's sign-out button posts.
func (l *Login) SignOutPath() string { return logoutPath }
