// Package plugin is the kubectl plugin `kubectl sluice`: its `ui` command runs the web UI on
// this machine in local mode, with the caller's kubeconfig, and opens it in the browser; gate,
// revert, release and promote make the UI's writes (pkg/actions) and show what the UI shows.
package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/sluicehq/sluice/gate-controller/gatecli"
	"github.com/sluicehq/sluice/pkg/runtime/httpserve"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/ui/internal/setup"
	"github.com/sluicehq/sluice/ui/internal/web"
)

const usage = `kubectl sluice: Sluice from kubectl.

Commands:
  ui       Run the Sluice web UI on this machine with your kubeconfig and open it in your browser.
           Every action runs as you, as kubectl would. With --port-forward it opens the UI installed
           in the cluster instead. kubectl sluice ui --help lists its flags.
  gate     Close, open, approve revisions through and list Gates; suspend or resume any object
           with a reason (close|open|approve|suspend|resume|list).
  revert   Take an environment back to a dry SHA it ran healthy: revert STRATEGY/BRANCH --to SHA.
  release  A ManifestRelease's snapshots: release history NAME, release rollback NAME --to N.
  promote  Where a PromotionStrategy's changes are and what holds them: promote status STRATEGY.

Every command takes kubectl's flags (-n, --kubeconfig, --context ...); COMMAND --help says more.
`

// Main runs the plugin with args (without the program name) until ctx ends, and returns the
// process's exit code: 0 done, 1 failed, 2 bad usage, and for gate 3 applied but not confirmed.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "ui":
		return runUI(ctx, args[1:], stdout, stderr)
	case "gate":
		gates := gatecli.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: stdout, ErrOut: stderr})
		return runCommand(ctx, gates, args[1:], stderr)
	case "revert", "release", "promote", "--version":
		return runCommand(ctx, newRootCommand(stdout, stderr), args, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "kubectl sluice: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// runUI serves the UI on a loopback address with the kubeconfig's identity, prints its URL and
// opens it, until ctx ends.
func runUI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags, err := parseUIFlags(args, stderr)
	if errors.Is(err, errHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "kubectl sluice ui:", err)
		return 2
	}
	serve := serveUI
	if flags.portForward {
		serve = forwardUI
	}
	if err := serve(ctx, flags, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "kubectl sluice ui:", err)
		return 1
	}
	return 0
}

func serveUI(ctx context.Context, flags uiFlags, stdout, stderr io.Writer) error {
	restConfig, err := flags.restConfig()
	if err != nil {
		return err
	}
	opts := options.Defaults("sluice-ui")
	opts.Namespace = flags.namespace
	// A laptop process: no metrics or probe listeners, no Lease.
	opts.MetricsBindAddress, opts.HealthProbeBindAddress, opts.LeaderElect = "0", "0", false
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := manager.New("sluice-ui", opts, restConfig, log)
	if err != nil {
		return err
	}
	cfg := setup.Config{Listen: flags.listen, Identity: setup.IdentityKubeconfig, LaunchToken: web.NewLaunchToken()}
	if err := cfg.Validate(); err != nil {
		return err
	}
	handler, err := setup.NewHandler(m, cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", flags.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", flags.listen, err)
	}
	// The URL carries the launch token once; the browser trades it for a cookie.
	url := setup.LaunchURL(ln.Addr().String(), cfg.LaunchToken)
	m.AddServer(func(ctx context.Context) error { return httpserve.Serve(ctx, ln, handler) })
	fmt.Fprintf(stdout, "Sluice UI, acting as you with your kubeconfig: %s\nPress Ctrl-C to stop.\n", url)
	if flags.open {
		if err := openBrowser(url); err != nil {
			fmt.Fprintf(stderr, "cannot open a browser (%v): open %s yourself\n", err, url)
		}
	}
	err = m.Run(ctx)
	if errors.Is(err, context.Canceled) || errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
