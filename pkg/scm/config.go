package scm

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
)

// Config is everything a provider needs. The caller reads credentials from the ScmProvider's
// Secret; the provider never sees the Secret itself.
type Config struct {
	// Key identifies the ScmProvider object, as "namespace/name". Every provider built with the
	// same Key shares one rate limiter.
	Key string
	// BaseURL of the SCM. Empty means the provider's public default where it has one.
	BaseURL string
	// AllowInsecureLoopbackHTTP accepts http:// for loopback hosts only (tests, local demos).
	AllowInsecureLoopbackHTTP bool
	// Credentials from the Secret.
	Credentials Credentials
	// CABundle is PEM certificates trusted in addition to the system roots.
	CABundle []byte

	// RateLimit overrides the provider's default bucket.
	RateLimit ratelimit.Limits
	// Limiters is the registry to take the limiter from; nil means ratelimit.Default.
	Limiters *ratelimit.Registry
	// MaxWait is the longest a call waits in line for a rate-limit pause before failing with a
	// rate-limited error; zero means ratelimit.DefaultMaxWait.
	MaxWait time.Duration

	// Transport is the base transport that sends each attempt; nil means a clone of
	// http.DefaultTransport. A CA bundle needs an *http.Transport here.
	Transport http.RoundTripper
	// WrapTransport, if set, wraps the transport that sends each attempt, so it sees every request
	// on the wire, retries included (for metrics and tracing).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// UserAgent is sent with every request.
	UserAgent string
}

// Credentials are secret material. They print as [redacted].
type Credentials struct {
	// Token is an access token (GitHub PAT, GitLab project/personal token, Gitea token).
	Token string
	// GitHubApp authenticates as a GitHub App installation instead of Token.
	GitHubApp *GitHubAppCredentials
	// WebhookSecret verifies webhook deliveries. Without it, every delivery is refused.
	WebhookSecret []byte
}

// GitHubAppCredentials identify a GitHub App installation.
type GitHubAppCredentials struct {
	AppID          int64
	InstallationID int64
	// PrivateKeyPEM is the App's RSA private key.
	PrivateKeyPEM []byte
}

func (Credentials) String() string            { return redacted }
func (Credentials) GoString() string          { return redacted }
func (GitHubAppCredentials) String() string   { return redacted }
func (GitHubAppCredentials) GoString() string { return redacted }

// Redactor returns a Redactor that hides every credential in c.
func (c Credentials) Redactor() *Redactor {
	secrets := []string{c.Token, string(c.WebhookSecret)}
	if c.GitHubApp != nil {
		secrets = append(secrets, string(c.GitHubApp.PrivateKeyPEM))
	}
	return NewRedactor(secrets...)
}

// ValidateBaseURL parses raw and enforces Sluice's URL rules: https, or http to a loopback host
// when allowLoopbackHTTP is set; a host; no credentials, query or fragment.
func ValidateBaseURL(raw string, allowLoopbackHTTP bool) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("base URL %q is not an absolute URL such as https://scm.example.com",
			NewRedactor().String(raw))
	}
	if u.User != nil {
		return nil, fmt.Errorf("base URL %s must not contain credentials: put them in the ScmProvider's Secret", RedactURL(u))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("base URL %s must not contain a query or a fragment", RedactURL(u))
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !allowLoopbackHTTP {
			return nil, fmt.Errorf("base URL %s uses http: use https (http is accepted only for a loopback host with allowInsecureLoopbackHTTP)", RedactURL(u))
		}
		if !IsLoopbackHost(u.Hostname()) {
			return nil, fmt.Errorf("base URL %s uses http to a host that is not loopback: use https", RedactURL(u))
		}
	default:
		return nil, fmt.Errorf("base URL %s has scheme %q: use https", RedactURL(u), u.Scheme)
	}
	return u, nil
}

// IsLoopbackHost reports localhost, 127.0.0.0/8 and ::1.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// HTTPClient is what NewHTTPClient builds.
type HTTPClient struct {
	*http.Client
	// Limiter is the shared rate limiter the client waits on.
	Limiter *ratelimit.Limiter
	// BaseURL is the validated base URL, or nil when Config.BaseURL was empty.
	BaseURL *url.URL
}

// NewHTTPClient builds the HTTP client every provider uses: TLS verification with the optional
// CA bundle, the shared rate limiter for Key with defaults when Config.RateLimit is zero, and no
// redirects that leave https.
func (c Config) NewHTTPClient(defaults ratelimit.Limits) (*HTTPClient, error) {
	var base *url.URL
	if c.BaseURL != "" {
		u, err := ValidateBaseURL(c.BaseURL, c.AllowInsecureLoopbackHTTP)
		if err != nil {
			return nil, err
		}
		base = u
	}
	limits := c.RateLimit.OrDefault(defaults)
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	if c.Key == "" {
		return nil, errors.New("scm config has no Key: set it to the ScmProvider's namespace/name so its rate limit is shared")
	}

	transport, err := c.baseTransport()
	if err != nil {
		return nil, err
	}
	if c.WrapTransport != nil {
		transport = c.WrapTransport(transport)
	}
	registry := c.Limiters
	if registry == nil {
		registry = ratelimit.Default
	}
	limiter := registry.Get(c.Key, limits)
	rt := ratelimit.NewTransport(transport, limiter)
	rt.MaxWait = c.MaxWait
	var outer http.RoundTripper = rt
	if c.UserAgent != "" {
		outer = userAgent{base: rt, agent: c.UserAgent}
	}
	allowHTTP := c.AllowInsecureLoopbackHTTP
	client := &http.Client{
		Transport: outer,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("stopped after 5 redirects")
			}
			if req.URL.Scheme != "https" && !(allowHTTP && req.URL.Scheme == "http" && IsLoopbackHost(req.URL.Hostname())) {
				return fmt.Errorf("refusing a redirect to %s: it leaves https", RedactURL(req.URL))
			}
			return nil
		},
	}
	return &HTTPClient{Client: client, Limiter: limiter, BaseURL: base}, nil
}

func (c Config) baseTransport() (http.RoundTripper, error) {
	var t *http.Transport
	switch base := c.Transport.(type) {
	case nil:
		def, ok := http.DefaultTransport.(*http.Transport)
		if !ok {
			return nil, errors.New("http.DefaultTransport is not an *http.Transport; pass Config.Transport")
		}
		t = def.Clone()
	case *http.Transport:
		t = base.Clone()
	default:
		// A custom round tripper (a test double, a tracing wrapper) owns its TLS settings.
		if len(c.CABundle) > 0 {
			return nil, errors.New("a CA bundle needs Config.Transport to be an *http.Transport (or nil)")
		}
		return c.Transport, nil
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.TLSClientConfig != nil {
		if t.TLSClientConfig.InsecureSkipVerify {
			return nil, errors.New("TLS verification cannot be turned off for an SCM: trust a private CA with the CA bundle instead")
		}
		tlsConfig = t.TLSClientConfig.Clone()
		tlsConfig.MinVersion = max(tlsConfig.MinVersion, tls.VersionTLS12)
	}
	if len(c.CABundle) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if tlsConfig.RootCAs != nil {
			pool = tlsConfig.RootCAs.Clone()
		}
		if !pool.AppendCertsFromPEM(c.CABundle) {
			return nil, errors.New("the CA bundle holds no PEM certificate: check the caBundle key")
		}
		tlsConfig.RootCAs = pool
	}
	t.TLSClientConfig = tlsConfig
	return t, nil
}

type userAgent struct {
	base  http.RoundTripper
	agent string
}

func (u userAgent) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Set("User-Agent", u.agent)
	return u.base.RoundTrip(r)
}
