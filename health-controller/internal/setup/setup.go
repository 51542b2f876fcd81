// Package setup wires the health-controller's one reconciler, of HealthChecks
// (internal/healthcheck), into a manager, in the style every controller's setup follows
// (docs/architecture.md, "One setup style"): Config, Defaults, AddFlags, Validate and Setup here;
// what the kinds share in wiring.go; one file per kind (healthchecks.go).
package setup

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sluicehq/sluice/health-controller/internal/healthcheck"
	"github.com/sluicehq/sluice/pkg/health/cel"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
)

// Config is the health-controller's own configuration, beside the shared flags of
// pkg/runtime/options.
type Config struct {
	// LibraryNamespace and LibraryName locate the user library ConfigMap. An empty name disables
	// the user library.
	LibraryNamespace string
	LibraryName      string
	// NoCrossNamespaceRefs requires targets and sources in the HealthCheck's own namespace.
	NoCrossNamespaceRefs bool
	// DefaultServiceAccount: see healthcheck.Reconciler.DefaultServiceAccount.
	DefaultServiceAccount string
	// CELCostLimit bounds the runtime cost of one expression evaluation.
	CELCostLimit uint64
}

// Defaults reads the user library from the controller's own namespace (POD_NAMESPACE, set by
// the chart), or sluice-system outside a cluster, and are locked down: targets in the
// HealthCheck's namespace only, read with the rights of its ServiceAccount "default".
func Defaults() Config {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "sluice-system"
	}
	return Config{LibraryNamespace: ns, LibraryName: "health-library", CELCostLimit: cel.DefaultCostLimit,
		NoCrossNamespaceRefs: true, DefaultServiceAccount: "default"}
}

// AddFlags sets the defaults and registers the flags on fs.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	*c = Defaults()
	fs.StringVar(&c.LibraryNamespace, "library-configmap-namespace", c.LibraryNamespace,
		"namespace of the user library ConfigMap (defaults to $POD_NAMESPACE)")
	fs.StringVar(&c.LibraryName, "library-configmap-name", c.LibraryName,
		"name of the user library ConfigMap, whose keys hold RFC-0009 health checks that override the built-in library; empty disables it")
	fs.BoolVar(&c.NoCrossNamespaceRefs, "no-cross-namespace-refs", c.NoCrossNamespaceRefs,
		"require every target, Kustomization and Application to be in the HealthCheck's namespace (inventories may still span namespaces); "+
			"--no-cross-namespace-refs=false allows other namespaces, still within what the HealthCheck's ServiceAccount may read")
	fs.StringVar(&c.DefaultServiceAccount, "default-service-account", c.DefaultServiceAccount,
		"ServiceAccount, of its own namespace, whose read rights bound a HealthCheck without spec.serviceAccountName (checked with SubjectAccessReviews). "+
			"Set it empty (--default-service-account=) only to let such HealthChecks read with the controller's own, cluster-wide rights: a warning is logged at start.")
	fs.Uint64Var(&c.CELCostLimit, "cel-cost-limit", c.CELCostLimit,
		"runtime cost after which a CEL evaluation stops with an error, making the object Unknown")
}

// Validate rejects a configuration the reconciler could not run with, in words a person can act on.
func (c *Config) Validate() error {
	if c.CELCostLimit == 0 {
		return fmt.Errorf("--cel-cost-limit must be positive, for example %d (the API server's own limit)", cel.DefaultCostLimit)
	}
	if bad := validation.IsDNS1123Subdomain(c.DefaultServiceAccount); c.DefaultServiceAccount != "" && len(bad) > 0 {
		return fmt.Errorf("--default-service-account %q is not a ServiceAccount name: %s", c.DefaultServiceAccount, strings.Join(bad, "; "))
	}
	if c.LibraryName == "" {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(c.LibraryName); len(errs) > 0 {
		return fmt.Errorf("--library-configmap-name %q is not a ConfigMap name: %s", c.LibraryName, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Label(c.LibraryNamespace); len(errs) > 0 {
		return fmt.Errorf("--library-configmap-namespace %q is not a namespace: %s; set it or POD_NAMESPACE", c.LibraryNamespace, strings.Join(errs, "; "))
	}
	return nil
}

// Setup registers the HealthCheck reconciler. An error is returned, never only logged, so the
// process exits with the reason instead of running without a reconciler.
func Setup(m *manager.Manager, cfg Config) error {
	_, err := HealthChecks(m, cfg)
	return err
}

// HealthChecks is Setup that returns the reconciler, for tests that look inside.
func HealthChecks(m *manager.Manager, cfg Config) (*healthcheck.Reconciler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	warnOpenModes(m, cfg)
	w, err := newWiring(m, cfg)
	if err != nil {
		return nil, err
	}
	if err := w.addHealthChecks(); err != nil {
		return nil, err
	}
	return w.healthChecks, nil
}

// warnOpenModes says at start when the controller lends its own reads to HealthChecks.
func warnOpenModes(m *manager.Manager, cfg Config) {
	if cfg.DefaultServiceAccount == "" {
		m.Log.Warn("--default-service-account is empty: a HealthCheck without spec.serviceAccountName reads with this controller's own rights, " +
			"so anyone who may create one learns the health, and through CEL expressions the content, of whatever this controller may read; " +
			"set --default-service-account=default to lock it down")
	}
	if !cfg.NoCrossNamespaceRefs {
		m.Log.Warn("--no-cross-namespace-refs=false: HealthChecks may target objects in other namespaces than their own")
	}
}
