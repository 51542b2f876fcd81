package setup

import (
	"errors"
	"flag"
	"strings"

	"github.com/sluicehq/sluice/ui/internal/web"
)

// addProxyCheckFlags registers the flags that bound whom proxy mode acts as.
func (c *Config) addProxyCheckFlags(fs *flag.FlagSet) {
	fs.Func("proxy-admin-groups", "With --identity=proxy: comma-separated groups that hold cluster-admin on this cluster (default "+strings.Join(web.DefaultAdminGroups, ",")+"); a request naming one is refused unless --proxy-allowed-admin-groups lists it. system: groups are always refused.", func(v string) error {
		c.AdminGroups = splitList(v)
		return nil
	})
	fs.Func("proxy-allowed-admin-groups", "With --identity=proxy: comma-separated admin groups the UI may act in all the same (RBAC on the UI's impersonation is the real bound).", func(v string) error {
		c.AllowedAdminGroups = splitList(v)
		return nil
	})
}

// validateTrustedProxies refuses --trusted-proxies without an ID token verifier
// (--oidc-issuer-url): a source address alone proves nothing (pod IPs are reused, ranges get
// widened). With one, they narrow where the proxy's token is believed from.
func (c *Config) validateTrustedProxies() error {
	if len(c.TrustedProxies) == 0 || c.OIDC.IssuerURL != "" {
		return nil
	}
	return errors.New("--trusted-proxies needs the proxy's ID token verified (--oidc-issuer-url and --oidc-client-id): headers from an address alone are never believed; run the proxy as a sidecar with --proxy-socket instead")
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
