// Command sluice-soak runs the soak (make soak): every controller with two replicas against the
// real local control plane and a git server, a workload, seeded faults and invariants. It exits 1
// on any violation, printing the seed that replays the schedule.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluicehq/sluice/soak/internal/soak"
)

func main() {
	cfg := soak.Config{Seed: uint64(time.Now().UnixNano() % 1_000_000), Duration: 30 * time.Minute, Strategies: 20,
		HydrateEvery: 5 * time.Second, FaultEvery: 20 * time.Second, ConvergeWithin: 5 * time.Minute, BinDir: "bin", Gitea: true, Flux: true, Releases: true}
	envDuration(&cfg.Duration, "SOAK_DURATION")
	envUint(&cfg.Seed, "SOAK_SEED")
	if v, err := strconv.Atoi(os.Getenv("SOAK_STRATEGIES")); err == nil {
		cfg.Strategies = v
	}
	report := flag.String("report", ".cache/soak/report.md", "Where the report is written (Markdown).")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "Seed of the fault schedule and the workload; a seed replays a run (SOAK_SEED).")
	flag.DurationVar(&cfg.Duration, "duration", cfg.Duration, "How long the faults and the workload run (SOAK_DURATION).")
	flag.IntVar(&cfg.Strategies, "strategies", cfg.Strategies, "PromotionStrategies, three environments each (SOAK_STRATEGIES).")
	flag.DurationVar(&cfg.HydrateEvery, "hydrate-every", cfg.HydrateEvery, "How often each strategy gets a new dry commit.")
	flag.DurationVar(&cfg.FaultEvery, "fault-every", cfg.FaultEvery, "Mean gap between faults.")
	flag.DurationVar(&cfg.ConvergeWithin, "converge-within", cfg.ConvergeWithin, "Bound on convergence once the faults stop.")
	flag.BoolVar(&cfg.Gitea, "gitea", cfg.Gitea, "Put one strategy in four on a real Gitea behind a fault proxy (502, 504, slow answers).")
	flag.BoolVar(&cfg.Flux, "flux", cfg.Flux, "Deploy one strategy in four's prod with the real Flux controllers, held by its gate (make testbin-flux).")
	flag.BoolVar(&cfg.Releases, "releases", cfg.Releases, "Run ManifestReleases (one per ten strategies), each upgraded every minute, one in three with failing tests.")
	flag.StringVar(&cfg.BinDir, "bin", cfg.BinDir, "Folder of the controller binaries (make build).")
	flag.Parse()
	if cfg.Strategies < 1 || cfg.Duration < time.Minute {
		fmt.Fprintln(os.Stderr, "sluice-soak: --strategies must be at least 1 and --duration at least 1m")
		os.Exit(2)
	}
	os.Exit(run(cfg, *report))
}

func run(cfg soak.Config, reportPath string) int {
	// envtest logs through controller-runtime; the soak prints its own timeline instead.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := os.MkdirAll(filepath.Dir(reportPath), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "sluice-soak:", err)
		return 2
	}
	logs, err := os.MkdirTemp("", "sluice-soak-logs-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice-soak:", err)
		return 2
	}
	cfg.LogDir = logs
	rep, err := soak.Run(ctx, cfg, os.Stdout)
	if rep != nil {
		f, ferr := os.Create(reportPath)
		if ferr == nil {
			rep.Write(f)
			_ = f.Close()
		}
		rep.Write(os.Stdout)
		fmt.Printf("\nreport: %s; controller logs: %s\n", reportPath, logs)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sluice-soak: seed %d: %v\n", cfg.Seed, err)
		return 2
	}
	if len(rep.Violations) > 0 {
		fmt.Fprintf(os.Stderr, "sluice-soak: %d invariant violations; replay with SOAK_SEED=%d\n", len(rep.Violations), cfg.Seed)
		return 1
	}
	fmt.Printf("soak: 0 violations (seed %d)\n", cfg.Seed)
	return 0
}

func envDuration(d *time.Duration, name string) {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil {
		*d = v
	}
}

func envUint(u *uint64, name string) {
	if v, err := strconv.ParseUint(os.Getenv(name), 10, 64); err == nil {
		*u = v
	}
}
