package setup

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/ui/internal/auth"
)

// IdentityOIDC: the UI signs people in with OpenID Connect itself and impersonates them.
const IdentityOIDC = "oidc"

// OIDC configures --identity=oidc. The client secret and the cookie key are read from files,
// never flags, so they reach neither a process list nor a log.
type OIDC struct {
	IssuerURL        string
	ClientID         string
	ClientSecretFile string
	RedirectURL      string
	Scopes           string
	UsernameClaim    string
	UsernamePrefix   string
	GroupsClaim      string
	GroupsPrefix     string
	CookieKeyFile    string
	SessionTTL       time.Duration
	SessionMaxAge    time.Duration
}

func defaultOIDC() OIDC {
	return OIDC{Scopes: "openid,profile,email,groups,offline_access", UsernameClaim: "sub", GroupsClaim: "groups",
		SessionTTL: 10 * time.Minute, SessionMaxAge: 12 * time.Hour}
}

func (o *OIDC) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.IssuerURL, "oidc-issuer-url", o.IssuerURL, "With --identity=oidc: the OpenID provider's issuer URL (https; http only on loopback, for tests). "+
		"With --identity=proxy: the issuer of the ID token the proxy forwards (Authorization: Bearer), which alone then names the person: identity headers are never read.")
	fs.StringVar(&o.ClientID, "oidc-client-id", o.ClientID, "With --identity=oidc: the UI's client ID at the provider. With --identity=proxy: the proxy's, the audience of the tokens it forwards.")
	fs.StringVar(&o.ClientSecretFile, "oidc-client-secret-file", o.ClientSecretFile, "With --identity=oidc: a file holding the client secret (never a flag, so it reaches no process list or log).")
	fs.StringVar(&o.RedirectURL, "oidc-redirect-url", o.RedirectURL, "With --identity=oidc: the UI's callback URL as registered at the provider, such as https://sluice.example.com/oidc/callback; https makes the cookies Secure.")
	fs.StringVar(&o.Scopes, "oidc-scopes", o.Scopes, "With --identity=oidc: comma-separated scopes asked for; offline_access brings the refresh token sessions are renewed with.")
	fs.StringVar(&o.UsernameClaim, "oidc-username-claim", o.UsernameClaim, "The ID token claim naming the user, as kube-apiserver's flag of the same name.")
	fs.StringVar(&o.UsernamePrefix, "oidc-username-prefix", o.UsernamePrefix, "Put before the user name, as kube-apiserver's flag: empty means none for the email claim and \"ISSUER#\" for any other; \"-\" means none.")
	fs.StringVar(&o.GroupsClaim, "oidc-groups-claim", o.GroupsClaim, "The ID token claim listing the user's groups (a string or a list); empty reads none.")
	fs.StringVar(&o.GroupsPrefix, "oidc-groups-prefix", o.GroupsPrefix, "Put before every group, as kube-apiserver's flag.")
	fs.StringVar(&o.CookieKeyFile, "oidc-cookie-key-file", o.CookieKeyFile, "With --identity=oidc: a file of at least 32 random bytes sealing the session cookie (AES-GCM); shared by every replica. Empty makes a random key at each start, which signs everyone out on a restart.")
	fs.DurationVar(&o.SessionTTL, "oidc-session-ttl", o.SessionTTL, "With --identity=oidc: how long a session is believed before the refresh token confirms the person again (never past the ID token's expiry).")
	fs.DurationVar(&o.SessionMaxAge, "oidc-session-max-age", o.SessionMaxAge, "With --identity=oidc: when a session ends, refreshed or not.")
}

// validate names every problem of an --identity=oidc configuration.
func (o *OIDC) validate() []error {
	var errs []error
	if err := secureURL("--oidc-issuer-url", o.IssuerURL); err != nil {
		errs = append(errs, err)
	}
	if err := secureURL("--oidc-redirect-url", o.RedirectURL); err != nil {
		errs = append(errs, err)
	}
	if o.ClientID == "" {
		errs = append(errs, errors.New("--identity=oidc needs --oidc-client-id"))
	}
	if o.ClientSecretFile == "" {
		errs = append(errs, errors.New("--identity=oidc needs --oidc-client-secret-file"))
	}
	if o.SessionTTL <= 0 || o.SessionMaxAge < o.SessionTTL {
		errs = append(errs, errors.New("--oidc-session-ttl must be positive and at most --oidc-session-max-age, for example 10m and 12h"))
	}
	if !strings.Contains(","+o.Scopes+",", ",openid,") {
		errs = append(errs, errors.New("--oidc-scopes must include openid"))
	}
	return errs
}

// validateForwarded checks --identity=proxy with --oidc-issuer-url: the proxy's ID token names
// the person, so the issuer and the proxy's client ID (the tokens' audience) are needed.
func (o *OIDC) validateForwarded() []error {
	var errs []error
	if err := secureURL("--oidc-issuer-url", o.IssuerURL); err != nil {
		errs = append(errs, err)
	}
	if o.ClientID == "" {
		errs = append(errs, errors.New("--identity=proxy with --oidc-issuer-url needs --oidc-client-id: the proxy's client ID, the audience of the ID tokens it forwards"))
	}
	return errs
}

// newTokenVerifier reads the provider's discovery document for proxy mode: the verifier of the
// ID tokens the proxy forwards (web.Proxy.Verifier).
func newTokenVerifier(o OIDC) (*auth.TokenVerifier, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return auth.NewTokenVerifier(ctx, o.IssuerURL, o.ClientID, o.claims())
}

func (o OIDC) claims() auth.Claims {
	return auth.Claims{Issuer: o.IssuerURL, UsernameClaim: o.UsernameClaim, UsernamePrefix: o.UsernamePrefix,
		GroupsClaim: o.GroupsClaim, GroupsPrefix: o.GroupsPrefix}
}

// secureURL accepts an absolute https URL, or http to a loopback host (a test's provider).
func secureURL(flag, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%s %q is not an absolute URL", flag, raw)
	}
	if u.Scheme == "https" {
		return nil
	}
	if ip, err := netip.ParseAddr(u.Hostname()); u.Scheme == "http" && (u.Hostname() == "localhost" || err == nil && ip.IsLoopback()) {
		return nil
	}
	return fmt.Errorf("%s %q must be https (http only to a loopback address)", flag, raw)
}

// newLogin reads the secret files and the provider's discovery document.
func newLogin(m *manager.Manager, o OIDC) (*auth.Login, error) {
	secret, err := os.ReadFile(o.ClientSecretFile)
	if err != nil {
		return nil, fmt.Errorf("--oidc-client-secret-file: %w", err)
	}
	key, err := cookieKey(m, o.CookieKeyFile)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var scopes []string
	for _, s := range strings.Split(o.Scopes, ",") {
		if s = strings.TrimSpace(s); s != "" {
			scopes = append(scopes, s)
		}
	}
	return auth.NewLogin(ctx, auth.Config{
		IssuerURL: o.IssuerURL, ClientID: o.ClientID, ClientSecret: strings.TrimSpace(string(secret)),
		RedirectURL: o.RedirectURL, Scopes: scopes, CookieKey: key, SessionTTL: o.SessionTTL, SessionMaxAge: o.SessionMaxAge,
		Claims: o.claims(),
	}, m.Log)
}

func cookieKey(m *manager.Manager, path string) ([]byte, error) {
	if path == "" {
		m.Log.Warn("no --oidc-cookie-key-file: sessions are sealed with a key made at start, so a restart signs everyone out and replicas do not share sessions")
		key := make([]byte, auth.MinKeyBytes)
		_, err := rand.Read(key)
		return key, err
	}
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--oidc-cookie-key-file: %w", err)
	}
	return key, nil
}
