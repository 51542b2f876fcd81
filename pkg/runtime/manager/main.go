package manager

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sluicehq/sluice/pkg/runtime/logging"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/pkg/version"
)

// SetupFunc registers a controller's reconcilers on the manager. It may also add flags of its own
// through the flag set passed to Main's caller before parsing.
type SetupFunc func(m *Manager) error

// Main is the whole main() of a Sluice controller: parse the shared flags, build the manager,
// register reconcilers, and run until SIGTERM or SIGINT. It returns the process exit code.
func Main(name string, fs *flag.FlagSet, args []string, setup SetupFunc) int {
	opts := options.Defaults(name)
	opts.AddFlags(fs)
	showVersion := fs.Bool("version", false, "Print the version and exit.")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	build := version.Get()
	if *showVersion {
		fmt.Fprintln(os.Stdout, name, build)
		return 0
	}
	log := processLogger(os.Stderr, name, opts)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	m, err := New(name, opts, nil, log)
	if err != nil {
		log.Error("cannot start", "error", err)
		return 1
	}
	if err := setup(m); err != nil {
		log.Error("cannot set up reconcilers", "error", err)
		return 1
	}
	log.Info("starting", "version", build.Version, "revision", build.Revision, "namespace", opts.Namespace, "labelSelector", opts.WatchLabelSelector, "leaderElect", opts.LeaderElect)
	if err := m.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("stopped with an error", "error", err)
		return 1
	}
	log.Info("stopped cleanly")
	return 0
}

// processLogger is the logger of the whole process. It names the process under "process": the key
// "controller" belongs to pkg/runtime/controller, which adds its queue's name, and a JSON document
// with a key twice is rejected by Elasticsearch and read differently by other log stores.
func processLogger(w io.Writer, name string, opts options.Options) *slog.Logger {
	return logging.New(w, opts.LogFormat, opts.Verbosity).With("process", name)
}

func loadConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("load --kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster access: set --kubeconfig, $KUBECONFIG, or run in a cluster: %w", err)
	}
	return cfg, nil
}
