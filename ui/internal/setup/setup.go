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
	// IdentityNone: read-only for everyone.
	IdentityNone = "none"
)

// Config is the UI's own configuration.
type Config struct {
	Listen       string
	Identity     string
	UserHeader   string
	GroupsHeader string
	// TrustedProxies are the addresses whose identity headers are believed.
	TrustedProxies []netip.Prefix
}

// AddFlags registers the UI's flags on fs.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	c.Identity = IdentityKubeconfig
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		c.Identity = IdentityNone
	}
	c.TrustedProxies = LoopbackProxies()
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:8092", "Address the UI serves on.")
	fs.StringVar(&c.Identity, "identity", c.Identity, "Who a request comes from: kubeconfig (local mode: you, acting with your kubeconfig; the default outside a cluster), proxy (the user an authenticating proxy names, impersonated), or none (read-only; the default in a cluster).")
	fs.StringVar(&c.UserHeader, "proxy-user-header", "X-Forwarded-User", "With --identity=proxy: the header naming the user.")
	fs.StringVar(&c.GroupsHeader, "proxy-groups-header", "X-Forwarded-Groups", "With --identity=proxy: the header listing the user's groups, comma-separated.")
	fs.Func("trusted-proxies", "With --identity=proxy: comma-separated CIDRs whose identity headers are believed (default 127.0.0.1/32,::1/128: a sidecar proxy).", func(v string) error {
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
}

// LoopbackProxies trust a proxy in the same pod (a sidecar) only.
func LoopbackProxies() []netip.Prefix {
	return []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128")}
}

// Validate rejects a configuration the UI cannot serve with.
func (c *Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("--listen %q is not host:port: %w", c.Listen, err))
	}
	switch c.Identity {
	case IdentityKubeconfig, IdentityNone:
	case IdentityProxy:
		if c.UserHeader == "" || len(c.TrustedProxies) == 0 {
			errs = append(errs, errors.New("--identity=proxy needs --proxy-user-header and --trusted-proxies"))
		}
	default:
		errs = append(errs, fmt.Errorf("--identity must be kubeconfig, proxy or none, got %q", c.Identity))
	}
	return errors.Join(errs...)
}

// Setup starts the store's informers and serves the UI on cfg.Listen.
func Setup(m *manager.Manager, cfg Config) error {
	handler, err := NewHandler(m, cfg)
	if err != nil {
		return err
	}
	m.AddServer(func(ctx context.Context) error { return Serve(ctx, cfg.Listen, handler, m) })
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
		identify = web.Local{User: whoAmI(m)}
		actor = &web.Actor{Config: m.RESTConfig, Recorder: m.Recorder}
	case IdentityProxy:
		identify = web.Proxy{UserHeader: cfg.UserHeader, GroupsHeader: cfg.GroupsHeader, Trusted: cfg.TrustedProxies}
		actor = &web.Actor{Config: m.RESTConfig, Recorder: m.Recorder}
	}
	srv, err := web.New(st, identify, actor, m.Log)
	if err != nil {
		return nil, err
	}
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
func Serve(ctx context.Context, addr string, handler http.Handler, m *manager.Manager) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", addr, err)
	}
	m.Log.Info("serving the UI", "url", "http://"+ln.Addr().String())
	return httpserve.Serve(ctx, ln, handler)
}
