// Package options holds the flags every Sluice controller shares, so each binary's main is only
// its name and its reconcilers.
package options

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// Options are the shared controller flags of DESIGN.md.
type Options struct {
	Kubeconfig         string
	Namespace          string
	WatchLabelSelector string
	Workers            int
	KubeAPIQPS         float64
	KubeAPIBurst       int

	LeaderElect             bool
	LeaderElectionNamespace string
	LeaderElectionID        string
	LeaseDuration           time.Duration
	RenewDeadline           time.Duration
	RetryPeriod             time.Duration

	ShutdownGracePeriod time.Duration

	MetricsBindAddress     string
	HealthProbeBindAddress string
	// ProfilerBindAddress serves Go's /debug/pprof, off by default: a heap profile shows the
	// contents of caches, and a CPU profile costs the process while it runs.
	ProfilerBindAddress string

	LogFormat string
	Verbosity int
}

// Ports are a controller's default metrics and health-probe ports.
type Ports struct{ Metrics, Probes int }

// DefaultPorts gives each controller its own ports, so all five run side by side on one host (a
// laptop, the demo) without flags. In a cluster every pod has its own network and the charts set
// the ports explicitly. A name not listed gets 8080 and 8081.
var DefaultPorts = map[string]Ports{
	"gate-controller":         {Metrics: 8080, Probes: 8081},
	"health-controller":       {Metrics: 8082, Probes: 8083},
	"promoter-controller":     {Metrics: 8084, Probes: 8085},
	"commitstatus-controller": {Metrics: 8086, Probes: 8087},
	"rollback-controller":     {Metrics: 8088, Probes: 8089},
	// The web UI serves its pages on 8092 (--listen).
	"sluice-ui": {Metrics: 8090, Probes: 8091},
}

// PortsFor returns the default ports of the controller named name.
func PortsFor(name string) Ports {
	if p, ok := DefaultPorts[name]; ok {
		return p
	}
	return Ports{Metrics: 8080, Probes: 8081}
}

// Defaults for a controller named name. client-go's 5 QPS / 10 burst starves any controller that
// patches more than a handful of objects, so the defaults are raised tenfold.
func Defaults(name string) Options {
	ports := PortsFor(name)
	return Options{
		Workers:                 2,
		KubeAPIQPS:              50,
		KubeAPIBurst:            100,
		LeaderElectionNamespace: inClusterNamespace(),
		LeaderElectionID:        name + "-leader",
		LeaseDuration:           15 * time.Second,
		RenewDeadline:           10 * time.Second,
		RetryPeriod:             2 * time.Second,
		// Well inside a pod's default terminationGracePeriodSeconds (30 s), which must also
		// cover releasing the Lease.
		ShutdownGracePeriod:    10 * time.Second,
		MetricsBindAddress:     fmt.Sprintf(":%d", ports.Metrics),
		HealthProbeBindAddress: fmt.Sprintf(":%d", ports.Probes),
		ProfilerBindAddress:    "0",
		LogFormat:              "json",
	}
}

// AddFlags registers the shared flags on fs.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig. Empty uses in-cluster config, then $KUBECONFIG.")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "Watch only this namespace. Empty watches all namespaces.")
	fs.StringVar(&o.WatchLabelSelector, "watch-label-selector", o.WatchLabelSelector, "Watch only objects matching this label selector, to shard objects across controller replicas.")
	fs.IntVar(&o.Workers, "workers", o.Workers, "Concurrent reconciles per controller.")
	fs.Float64Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Steady requests per second to the Kubernetes API.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of requests to the Kubernetes API.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Run controllers only while holding a Lease, so replicas can stand by.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the leader-election Lease.")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "Name of the leader-election Lease.")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", o.LeaseDuration, "How long standbys wait before taking over a Lease that is not renewed.")
	fs.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", o.RenewDeadline, "How long the leader keeps retrying to renew before it gives up leading.")
	fs.DurationVar(&o.RetryPeriod, "leader-election-retry-period", o.RetryPeriod, "How often to try to acquire or renew the Lease.")
	fs.DurationVar(&o.ShutdownGracePeriod, "shutdown-grace-period", o.ShutdownGracePeriod, "How long reconciles in flight may finish after SIGTERM, while the Lease is still held; keep it well below the pod's terminationGracePeriodSeconds.")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "Address of the /metrics server; \"0\" disables it.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "Address of the /livez and /readyz server; \"0\" disables it.")
	fs.StringVar(&o.ProfilerBindAddress, "profiler-bind-address", o.ProfilerBindAddress, "Address of Go's /debug/pprof server, such as 127.0.0.1:6060; \"0\" (the default) disables it.")
	fs.StringVar(&o.LogFormat, "log-format", o.LogFormat, "Log format: json or text.")
	fs.IntVar(&o.Verbosity, "v", o.Verbosity, "Log verbosity: 0 logs info and errors, higher values add debug detail.")
}

// Validate reports every invalid flag at once, in words a person can act on.
func (o *Options) Validate() error {
	var errs []error
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("--workers must be at least 1, got %d", o.Workers))
	}
	if o.KubeAPIQPS <= 0 || o.KubeAPIBurst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive, got %v and %d", o.KubeAPIQPS, o.KubeAPIBurst))
	}
	if _, err := labels.Parse(o.WatchLabelSelector); err != nil {
		errs = append(errs, fmt.Errorf("--watch-label-selector %q is not a label selector: %w", o.WatchLabelSelector, err))
	}
	if o.ShutdownGracePeriod < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-grace-period must not be negative, got %s", o.ShutdownGracePeriod))
	}
	if o.LogFormat != "json" && o.LogFormat != "text" {
		errs = append(errs, fmt.Errorf("--log-format must be json or text, got %q", o.LogFormat))
	}
	if o.LeaderElect {
		if o.LeaderElectionNamespace == "" {
			errs = append(errs, errors.New("--leader-election-namespace is required with --leader-elect outside a cluster"))
		}
		if o.LeaseDuration <= o.RenewDeadline || o.RenewDeadline <= o.RetryPeriod || o.RetryPeriod <= 0 {
			errs = append(errs, fmt.Errorf("leader election needs lease-duration > renew-deadline > retry-period > 0, got %s, %s, %s", o.LeaseDuration, o.RenewDeadline, o.RetryPeriod))
		}
	}
	return errors.Join(errs...)
}

func inClusterNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	data, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
