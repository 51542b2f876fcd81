// Package setup wires the UI into a manager: Config, AddFlags, Validate and Setup(m, cfg) error,
// the same shape as every controller module.
package setup

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/pkg/runtime/httpserve"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/ui/internal/store"
	"github.com/sluicehq/sluice/ui/internal/web"
)

// Identity modes: who a request comes from, and so whether and as whom the UI acts.
const (
	// IdentityKubeconfig: local mode, every request is the kubeconfig's user, served on loopback.
	IdentityKubeconfig = "kubeconfig"
	// IdentityProxy: a trusted authenticating proxy (oauth2-proxy) names the user in headers;
	// the UI impersonates them.
	IdentityProxy = "proxy"
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
	// TrustedProxies are the addresses of a proxy in another pod, whose identity headers are
	// believed. Never loopback: a port-forward to the UI's pod arrives from there too.
	TrustedProxies []netip.Prefix
	// AdminGroups are refused in proxy mode unless in AllowedAdminGroups (proxy_checks.go).
	AdminGroups, AllowedAdminGroups []string
	// ProxyVerifier verifies the ID token of a proxy at TrustedProxies; without it they are refused.
	ProxyVerifier web.TokenVerifier
	// Anonymous is what a request naming nobody may do: "" nothing, or read (anonymous.go).
	Anonymous string
	// InsecureListenAnywhere lets local mode listen on a non-loopback address (local.go).
	InsecureListenAnywhere bool
	// LaunchToken is local mode's token; empty, $SLUICE_UI_TOKEN or a random one (local.go).
	LaunchToken string
}

// AddFlags registers the UI's flags on fs.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	c.Identity = IdentityKubeconfig
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		c.Identity = IdentityNone
	}
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:8092", "Address the UI serves on.")
	fs.StringVar(&c.Identity, "identity", c.Identity, "Who a request comes from: kubeconfig (local mode: you, acting with your kubeconfig; the default outside a cluster), proxy (the user an authenticating proxy names, impersonated), or none (nobody is named: with --anonymous=read everyone reads, else every page is refused; the default in a cluster).")
	fs.StringVar(&c.UserHeader, "proxy-user-header", "X-Forwarded-User", "With --identity=proxy: the header naming the user.")
	fs.StringVar(&c.GroupsHeader, "proxy-groups-header", "X-Forwarded-Groups", "With --identity=proxy: the header listing the user's groups, comma-separated.")
	fs.StringVar(&c.ProxySocket, "proxy-socket", "", "With --identity=proxy: also serve on this Unix socket (an absolute path in an emptyDir shared with a sidecar proxy, which forwards to unix://PATH); identity headers are believed on its connections only, and every request to --listen is anonymous (refused unless --anonymous=read).")
	fs.Func("trusted-proxies", "With --identity=proxy and a proxy in another pod: comma-separated CIDRs of the proxy, whose identity headers are believed. Never loopback: a port-forward to the UI's pod arrives from there; a sidecar uses --proxy-socket.", func(v string) error {
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
	case IdentityKubeconfig, IdentityNone:
		if c.ProxySocket != "" || len(c.TrustedProxies) > 0 {
			errs = append(errs, fmt.Errorf("--proxy-socket and --trusted-proxies are for --identity=proxy only, not %s", c.Identity))
		}
	case IdentityProxy:
		errs = append(errs, c.validateProxy()...)
	default:
		errs = append(errs, fmt.Errorf("--identity must be kubeconfig, proxy or none, got %q", c.Identity))
	}
	errs = append(errs, c.validateLocal(), c.validateAnonymous())
	return errors.Join(errs...)
}

func (c *Config) validateProxy() []error {
	var errs []error
	if c.UserHeader == "" {
		errs = append(errs, errors.New("--identity=proxy needs --proxy-user-header"))
	}
	if c.ProxySocket == "" && len(c.TrustedProxies) == 0 {
		errs = append(errs, errors.New("--identity=proxy needs --proxy-socket (a sidecar proxy) or --trusted-proxies (a proxy in another pod)"))
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

// Setup starts the store's informers and serves the UI on cfg.Listen.
func Setup(m *manager.Manager, cfg Config) error {
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

// NewHandler builds the store and the web server on m, without serving it: tests serve it on a
// listener of their own.
func NewHandler(m *manager.Manager, cfg Config) (http.Handler, error) {
	st, err := store.New(m.Sluice, m.Metadata, m.Options.Namespace)
	if err != nil {
		return nil, err
	}
	st.Log(m.Log)
	m.WaitFor(st.Kinds.HasSynced)
	m.AddServer(st.Kinds.Run)

	var identify web.Identifier = web.Anonymous{}
	var actor *web.Actor
	switch cfg.Identity {
	case IdentityKubeconfig:
		identify = localIdentity(cfg, whoAmI(m), m.Log)
		actor = &web.Actor{Config: m.RESTConfig, Recorder: m.Recorder}
	case IdentityProxy:
		identify = web.Proxy{UserHeader: cfg.UserHeader, GroupsHeader: cfg.GroupsHeader, Trusted: cfg.TrustedProxies,
			Verifier: cfg.ProxyVerifier, AdminGroups: cfg.AdminGroups, AllowedGroups: cfg.AllowedAdminGroups}
		actor = &web.Actor{Config: m.RESTConfig, Recorder: m.Recorder}
	}
	srv, err := web.New(st, identify, actor, m.Log)
	if err != nil {
		return nil, err
	}
	srv.AnonymousRead = anonymousRead(cfg, m.Log)
	return srv.Handler(), nil
}

// whoAmI asks the API server who the kubeconfig's user is, so Events name them as RBAC does.
func whoAmI(m *manager.Manager) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := m.Kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || r.Status.UserInfo.Username == "" {
		m.Log.Warn("cannot tell who the kubeconfig's user is; Events will say \"kubeconfig user\"", "error", err)
		return "kubeconfig user"
	}
	return r.Status.UserInfo.Username
}

// Serve serves handler on addr until ctx ends. The event streams last as long as a page is
// open, so there is no write timeout; headers must come within 10 s.
// In local mode (token set) it prints the URL that carries the launch token to stdout, never to
// the log.
func Serve(ctx context.Context, addr string, handler http.Handler, m *manager.Manager, token string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", addr, err)
	}
	m.Log.Info("serving the UI", "url", "http://"+ln.Addr().String())
	if token != "" {
		fmt.Printf("Sluice UI, acting as you with your kubeconfig; open:\n  %s\n", LaunchURL(ln.Addr().String(), token))
	}
	return httpserve.Serve(ctx, ln, handler)
}

// ListenProxySocket listens on the Unix socket at path for a sidecar proxy, replacing a socket
// left by an earlier run (never any other file), readable and writable by its owner and group
// only: the pod's fsGroup, which an emptyDir gives every container of the pod.
func ListenProxySocket(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("--proxy-socket %s exists and is not a socket; refusing to replace it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("--proxy-socket %s: removing the stale socket: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("--proxy-socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o660); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("--proxy-socket %s: %w", path, err)
	}
	return ln, nil
}
