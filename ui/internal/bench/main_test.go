// Package bench measures the UI on the real local control plane with 1,000 PromotionStrategies
// of 3 environments in 100 namespaces, 200 Gates and 1,000 HealthChecks: the first byte of the
// pipeline list, a strategy page, a status write reaching an open page, and the server's memory,
// each beside kubectl doing the same in the same run; 50 live pages under a write every 100 ms
// (live_test.go; with real Flux reconciling Kustomizations under open gate pages, flux_test.go); and the pipeline list of a person who may
// read 10 of the namespaces (peruser_test.go), beside the unfiltered list. The UI runs as its own process (the binary `make
// build` makes), so its memory is its own. `make bench` runs it; docs/benchmarks.md has figures.
package bench

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
)

const (
	namespaces   = 100
	strategies   = 1000
	gates        = 200
	healthChecks = 1000
)

var (
	env   *testenv.Env
	ui    *exec.Cmd
	uiURL string
	// uiClient carries the local-mode UI's cookie.
	uiClient = http.DefaultClient
	kubectl  string
)

func TestMain(m *testing.M) {
	flag.Parse()
	// The control plane is for the benchmarks; `go test ./...` runs none and should not wait for it.
	if testing.Short() || flag.Lookup("test.bench").Value.String() == "" {
		os.Exit(m.Run())
	}
	var err error
	if env, err = testenv.Start(testenv.Options{}); err == nil {
		err = setUp()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if env != nil {
			_ = env.Stop()
		}
		os.Exit(1)
	}
	code := m.Run()
	for _, p := range []*exec.Cmd{ui, personUI} {
		_ = p.Process.Signal(os.Interrupt)
		_ = p.Wait()
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop local control plane:", err)
	}
	os.Exit(code)
}

func setUp() error {
	var err error
	if kubectl, err = testenv.Tool("kubectl"); err != nil {
		return err
	}
	if err := seed(context.Background()); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if err := startUI(); err != nil {
		return err
	}
	return startPersonUI()
}

// seed creates the objects: strategies with their status, as the promoter writes it.
func seed(ctx context.Context) error {
	for n := range namespaces {
		ns := fmt.Sprintf("team-%02d", n)
		if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	nsOf := func(i int) string { return fmt.Sprintf("team-%02d", i%namespaces) }
	for i := range gates {
		g := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: nsOf(i), Name: fmt.Sprintf("gate-%03d", i)}}
		if _, err := env.Sluice.GatingV1alpha1().Gates(g.Namespace).Create(ctx, g, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for i := range healthChecks {
		hc := &healthv1alpha1.HealthCheck{ObjectMeta: metav1.ObjectMeta{Namespace: nsOf(i), Name: fmt.Sprintf("health-%04d", i)},
			Spec: healthv1alpha1.HealthCheckSpec{Targets: []healthv1alpha1.Target{{Object: &healthv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}}}}
		if _, err := env.Sluice.HealthV1alpha1().HealthChecks(hc.Namespace).Create(ctx, hc, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for i := range strategies {
		if err := createStrategy(ctx, nsOf(i), fmt.Sprintf("app-%04d", i)); err != nil {
			return err
		}
	}
	return nil
}

func createStrategy(ctx context.Context, ns, name string) error {
	ps := &promoterv1alpha1.PromotionStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "repo"}, DryBranch: "main"}}
	for _, b := range []string{"env/dev", "env/staging", "env/prod"} {
		ps.Spec.Environments = append(ps.Spec.Environments, promoterv1alpha1.Environment{Branch: b,
			Gates: &promoterv1alpha1.GateSelector{Refs: []promoterv1alpha1.GateReference{{Name: "gate-000"}}}})
		ps.Status.Environments = append(ps.Status.Environments, promoterv1alpha1.EnvironmentStatus{Branch: b,
			Active: promoterv1alpha1.CommitState{DrySHA: strings.Repeat("a", 40), HydratedSHA: strings.Repeat("b", 40), Phase: "success",
				CommitStatuses: []promoterv1alpha1.CommitStatusPhase{{Key: "health", Phase: "success"}}},
			Proposed: promoterv1alpha1.CommitState{DrySHA: strings.Repeat("c", 40), HydratedSHA: strings.Repeat("d", 40), Phase: "pending"},
			Blocked:  "waiting for health on the proposed commit"})
	}
	created, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(ns).Create(ctx, ps, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Status = ps.Status
	_, err = env.Sluice.PromoterV1alpha1().PromotionStrategies(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// uiBinary is bin/sluice-ui, built now when make build has not.
func uiBinary() (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, "bin", "sluice-ui")
	if _, err := os.Stat(bin); err != nil {
		bin = filepath.Join(os.TempDir(), "sluice-ui-bench")
		build := exec.Command("go", "build", "-o", bin, "./ui/cmd/sluice-ui")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			return "", fmt.Errorf("build sluice-ui: %w: %s", err, out)
		}
	}
	return bin, nil
}

// startUI runs the UI in local mode and waits until it lists every strategy.
func startUI() error {
	bin, err := uiBinary()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	ui = exec.Command(bin, "--kubeconfig", env.Kubeconfig, "--listen", addr, "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	// Local mode lets in only the launch token's cookie: the bench chooses the token.
	token := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	ui.Env = append(os.Environ(), "SLUICE_UI_TOKEN="+token)
	jar, err := cookiejar.New(nil)
	if err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(addr)
	jar.SetCookies(&url.URL{Scheme: "http", Host: addr, Path: "/"}, []*http.Cookie{{Name: "sluice_ui_" + port, Value: token, Path: "/"}})
	uiClient = &http.Client{Jar: jar}
	if err := ui.Start(); err != nil {
		return err
	}
	uiURL = "http://" + addr
	want := fmt.Sprintf("%d of %d PromotionStrategies", strategies, strategies)
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if body, err := get(uiURL + "/pipelines"); err == nil && strings.Contains(body, want) {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("sluice-ui did not list %d strategies within 2 minutes", strategies)
}

func get(url string) (string, error) {
	resp, err := uiClient.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, err = bufio.NewReader(resp.Body).WriteTo(&b)
	return b.String(), err
}
