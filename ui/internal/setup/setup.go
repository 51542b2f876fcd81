// Package setup wires the UI into a manager in the style every controller's setup follows
// (docs/architecture.md, "One setup style"): Config, Defaults, AddFlags, Validate and Setup here;
// the handler and who a request comes from in handler.go; listening in serve.go.
package setup

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/pkg/runtime/httpserve"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/ui/internal/web"
)

// Identity modes: who a request comes from, and so whether and as whom the UI acts.
const (
	// IdentityKubeconfig: local mode, every request is the kubeconfig's user, served on loopback.
	IdentityKubeconfig = "kubeconfig"
	// IdentityProxy: a trusted authenticating proxy (oauth2-proxy) names the user in headers;
	// the UI impersonates them.
	IdentityProxy = "proxy"
	// IdentityOIDC (oidc.go): the UI signs people in itself and impersonates them.
	// IdentityNone: nobody is named; with --anonymous=read everyone reads, else nobody does.
	IdentityNone = "none"
)

// Config is the UI's own configuration.
type Config struct {
	Listen       string
	Identity     string
	UserHeader   string
	GroupsHeader string
	// ProxySocket is the Unix socket a sidecar proxy forwards to; identity headers are believed
	// on its connections. Only containers of the UI's pod can reach it (a shared emptyDir).
	ProxySocket string
	// TrustedProxies are the addresses of a proxy in another pod. Only with --oidc-issuer-url:
	// an address alone is never believed, and the proxy's ID token is then believed from these
	// addresses only (proxy_checks.go). Never loopback: a port-forward arrives from there too.
	TrustedProxies []netip.Prefix
	// AdminGroups are refused in proxy mode unless in AllowedAdminGroups (proxy_checks.go).
	AdminGroups, AllowedAdminGroups []string
	// Anonymous is what a request naming nobody may do: "" nothing, or read (anonymous.go).
	Anonymous string
	// InsecureListenAnywhere lets local mode listen on a non-loopback address (local.go).
	InsecureListenAnywhere bool
	// LaunchToken is local mode's token; empty, $SLUICE_UI_TOKEN or a random one (local.go).
	LaunchToken string
	// OIDC configures --identity=oidc (oidc.go).
	OIDC OIDC
}

// Defaults returns the configuration the flags start from: local mode on loopback outside a
// cluster, nobody named inside one (KUBERNETES_SERVICE_HOST set).
func Defaults() Config {
	c := Config{
		Listen:       "127.0.0.1:8092",
		Identity:     IdentityKubeconfig,
		UserHeader:   "X-Forwarded-User",
		GroupsHeader: "X-Forwarded-Groups",
		OIDC:         defaultOIDC(),
		AdminGroups:  web.DefaultAdminGroups,
	}
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		c.Identity = IdentityNone
	}
	return c
}

// AddFlags registers the UI's flags on fs, starting from Defaults: manager.Main starts from a
// zero Config.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	*c = Defaults()
	fs.StringVar(&c.Listen, "listen", c.Listen, "Address the UI serves on.")
	fs.StringVar(&c.Identity, "identity", c.Identity, "Who a request comes from: kubeconfig (local mode: you, acting with your kubeconfig; the default outside a cluster), proxy (the user an authenticating proxy names, impersonated), oidc (the person who signed in with OpenID Connect, impersonated), or none (nobody is named: with --anonymous=read everyone reads, else every page is refused; the default in a cluster).")
	fs.StringVar(&c.UserHeader, "proxy-user-header", c.UserHeader, "With --identity=proxy: the header naming the user.")
	fs.StringVar(&c.GroupsHeader, "proxy-groups-header", c.GroupsHeader, "With --identity=proxy: the header listing the user's groups, comma-separated.")
	fs.StringVar(&c.ProxySocket, "proxy-socket", c.ProxySocket, "With --identity=proxy: also serve on this Unix socket (an absolute path in an emptyDir shared with a sidecar proxy, which forwards to unix://PATH); identity headers are believed on its connections only, and every request to --listen is anonymous (refused unless --anonymous=read).")
	fs.Func("trusted-proxies", "With --identity=proxy, --oidc-issuer-url and a proxy in another pod: comma-separated CIDRs of the proxy, the only addresses its ID token is then believed from (an address alone is never believed, so this needs --oidc-issuer-url). Never loopback: a port-forward to the UI's pod arrives from there; a sidecar uses --proxy-socket.", func(v string) error {
		var out []netip.Prefix
		for _, s := range strings.Split(v, ",") {
			p, err := netip.ParsePrefix(strings.TrimSpace(s))
			if err != nil {
				return fmt.Errorf("%q is not a CIDR such as 10.0.0.0/8", s)
			}
			out = append(out, p)
		}
		c.TrustedProxies = out
		return nil
	})
	c.OIDC.addFlags(fs)
	c.addLocalFlags(fs)
	c.addProxyCheckFlags(fs)
	c.addAnonymousFlag(fs)
}

// Validate rejects a configuration the UI cannot serve with, naming every problem.
func (c *Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("--listen %q is not host:port: %w", c.Listen, err))
	}
	switch c.Identity {
	case IdentityKubeconfig, IdentityNone, IdentityOIDC:
		if c.ProxySocket != "" || len(c.TrustedProxies) > 0 {
			errs = append(errs, fmt.Errorf("--proxy-socket and --trusted-proxies are for --identity=proxy only, not %s", c.Identity))
		}
	case IdentityProxy:
		errs = append(errs, c.validateProxy()...)
	default:
		errs = append(errs, fmt.Errorf("--identity must be kubeconfig, proxy, oidc or none, got %q", c.Identity))
	}
	if c.Identity == IdentityOIDC {
		errs = append(errs, c.OIDC.validate()...)
	}
	errs = append(errs, c.validateLocal(), c.validateAnonymous())
	return errors.Join(errs...)
}

func (c *Config) validateProxy() []error {
	var errs []error
	if c.OIDC.IssuerURL != "" {
		// The forwarded ID token names the person, wherever the request comes from.
		errs = append(errs, c.OIDC.validateForwarded()...)
	} else {
		if c.UserHeader == "" {
			errs = append(errs, errors.New("--identity=proxy needs --proxy-user-header"))
		}
		if c.ProxySocket == "" && len(c.TrustedProxies) == 0 {
			errs = append(errs, errors.New("--identity=proxy needs --proxy-socket (a sidecar proxy) or --oidc-issuer-url (the proxy's ID token is verified, wherever the proxy runs)"))
		}
	}
	if err := c.validateTrustedProxies(); err != nil {
		errs = append(errs, err)
	}
	if c.ProxySocket != "" && !filepath.IsAbs(c.ProxySocket) {
		errs = append(errs, fmt.Errorf("--proxy-socket %q must be an absolute path", c.ProxySocket))
	}
	for _, p := range c.TrustedProxies {
		if coversLoopback(p) {
			errs = append(errs, fmt.Errorf("--trusted-proxies %s covers loopback, where a kubectl port-forward to the UI's pod arrives past the proxy: a sidecar proxy uses --proxy-socket", p))
		}
	}
	return errs
}

// coversLoopback reports whether p holds any loopback address, IPv4-mapped ones included.
func coversLoopback(p netip.Prefix) bool {
	for _, loopback := range []string{"127.0.0.0/8", "::1/128", "::ffff:127.0.0.0/104"} {
		if p.Overlaps(netip.MustParsePrefix(loopback)) {
			return true
		}
	}
	return false
}

// Setup validates cfg, starts the store's informers and serves the UI on cfg.Listen (and to a
// sidecar proxy on cfg.ProxySocket). An error is returned, never only logged, so the process
// exits with the reason.
func Setup(m *manager.Manager, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg.LaunchToken = launchToken(cfg)
	handler, err := NewHandler(m, cfg)
	if err != nil {
		return err
	}
	m.AddServer(func(ctx context.Context) error { return Serve(ctx, cfg.Listen, handler, m, cfg.LaunchToken) })
	if cfg.ProxySocket != "" {
		ln, err := ListenProxySocket(cfg.ProxySocket)
		if err != nil {
			return err
		}
		m.Log.Info("serving the UI to the proxy", "socket", cfg.ProxySocket)
		m.AddServer(func(ctx context.Context) error { return httpserve.Serve(ctx, ln, web.ViaProxySocket(handler)) })
	}
	return nil
}
