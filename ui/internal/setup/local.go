package setup

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/sluicehq/sluice/ui/internal/web"
)

// tokenEnv supplies local mode's launch token instead of a random one (as JUPYTER_TOKEN does),
// for scripts that start sluice-ui and open it themselves.
const tokenEnv = "SLUICE_UI_TOKEN"

// addLocalFlags registers the flags of local mode.
func (c *Config) addLocalFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.InsecureListenAnywhere, "insecure-listen-anywhere", false, "With --identity=kubeconfig: allow a --listen address that is not loopback. Anyone who reaches it and learns the launch token acts with your kubeconfig; a warning is logged at start.")
}

// validateLocal refuses a local-mode listen address other hosts can reach, unless asked for.
func (c *Config) validateLocal() error {
	if c.Identity != IdentityKubeconfig || c.InsecureListenAnywhere {
		return nil
	}
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil || isLoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("--listen %s is not a loopback address: in local mode the UI acts with your kubeconfig, so it serves on 127.0.0.1, [::1] or localhost only (--insecure-listen-anywhere allows it)", c.Listen)
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// localIdentity is local mode's Identifier: the kubeconfig's user and this launch's token.
func localIdentity(cfg Config, user string, log *slog.Logger) web.Local {
	if cfg.InsecureListenAnywhere {
		log.Warn("--insecure-listen-anywhere: the UI acts with your kubeconfig for anyone who reaches " + cfg.Listen + " with the launch token")
	}
	// Without a token set by Setup, a random one nobody knows: the UI then admits nobody.
	token := cfg.LaunchToken
	if token == "" {
		token = web.NewLaunchToken()
	}
	return web.Local{User: user, Token: token}
}

// launchToken is local mode's token for this launch: $SLUICE_UI_TOKEN, else a random one;
// empty in the other modes.
func launchToken(cfg Config) string {
	if cfg.Identity != IdentityKubeconfig {
		return ""
	}
	if cfg.LaunchToken != "" {
		return cfg.LaunchToken
	}
	if t := strings.TrimSpace(os.Getenv(tokenEnv)); t != "" {
		return t
	}
	return web.NewLaunchToken()
}

// LaunchURL is the URL that lets a browser into local mode at addr once: it carries the token.
func LaunchURL(addr, token string) string {
	return "http://" + addr + "/?token=" + token
}
