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

// Config is a controller's own configuration, its internal/setup.Config: AddFlags registers its
// flags with their defaults, and Validate rejects values no reconciler could run with, in words
// a person can act on.
type Config interface {
	AddFlags(fs *flag.FlagSet)
	Validate() error
}

// Main is the whole main() of a Sluice controller:
//
//	func main() { os.Exit(manager.Main("rollback-controller", setup.Setup)) }
//
// It parses the shared flags and the controller's own (Config) from the command line, validates
// them, builds the manager, registers the reconcilers with setup, and runs until SIGTERM or
// SIGINT. --version prints the version and returns. It returns the process exit code: 2 for bad
// flags, 1 for any other failure.
func Main[C any, PC interface {
	*C
	Config
}](name string, setup func(*Manager, C) error) int {
	return mainWith[C, PC](name, flag.CommandLine, os.Args[1:], os.Stdout, os.Stderr, setup)
}

func mainWith[C any, PC interface {
	*C
	Config
}](name string, fs *flag.FlagSet, args []string, stdout, stderr io.Writer, setup func(*Manager, C) error) int {
	var cfg C
	return run(name, fs, args, stdout, stderr, PC(&cfg), func(m *Manager) error { return setup(m, cfg) })
}

// run is Main with its inputs explicit.
func run(name string, fs *flag.FlagSet, args []string, stdout, stderr io.Writer, cfg Config, setup func(*Manager) error) int {
	opts := options.Defaults(name)
	opts.AddFlags(fs)
	cfg.AddFlags(fs)
	showVersion := fs.Bool("version", false, "Print the version and exit.")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	build := version.Get()
	if *showVersion {
		fmt.Fprintln(stdout, name, build)
		return 0
	}
	log := processLogger(stderr, name, opts)
	if err := errors.Join(opts.Validate(), cfg.Validate()); err != nil {
		log.Error("invalid flags", "error", err)
		return 2
	}

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
