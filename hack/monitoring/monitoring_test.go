package monitoring

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/dev/demo"
	"github.com/sluicehq/sluice/pkg/scm/scmtest"
	"github.com/sluicehq/sluice/testenv"
)

// Every alert and panel expression parses as PromQL and reads at least one metric.
func TestExpressionsParse(t *testing.T) {
	for _, exprs := range [][]expression{ruleExpressions(t), dashboardExpressions(t)} {
		sels, err := selectors(exprs)
		require.NoError(t, err)
		read := map[string]bool{}
		for _, s := range sels {
			read[s.Where] = true
		}
		for _, e := range exprs {
			assert.True(t, read[e.Where], "%s reads a metric", e.Where)
		}
	}
}

// The demo story runs every controller binary against the local control plane; once it has told
// it, each controller's real /metrics is scraped. Every metric an alert or a dashboard panel
// reads must be exported by some controller, with the labels the expression matches on.
func TestAlertsAndDashboardReadExportedMetrics(t *testing.T) {
	testenv.SkipIfShort(t)
	sels, err := selectors(append(ruleExpressions(t), dashboardExpressions(t)...))
	require.NoError(t, err)
	bin, err := demo.BinDirFromRepo()
	require.NoError(t, err)
	for _, c := range []string{"gate-controller", "health-controller", "commitstatus-controller", "promoter-controller", "rollback-controller", "kubectl-gate"} {
		if _, err := os.Stat(filepath.Join(bin, c)); err != nil {
			t.Fatalf("%s is not built: run make build (%v)", c, err)
		}
	}

	var exported map[string]*dto.MetricFamily
	var perController map[string]map[string]*dto.MetricFamily
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var out strings.Builder
	err = demo.Run(ctx, demo.Options{BinDir: bin, Out: &out, LogDir: t.TempDir(), AfterStory: func(ctx context.Context, s *demo.Story) error {
		if err := refusingAndRateLimitedSCM(ctx, t, s); err != nil {
			return err
		}
		leader, stop, err := startLeaderElected(ctx, t, bin, s)
		if err != nil {
			return err
		}
		defer stop()
		targets := map[string]string{"gate-controller (leader-elected)": leader}
		for name, addr := range s.Metrics {
			targets[name] = addr
		}
		// Scrape until every metric the expressions read is there: some appear only once the
		// controllers have acted on the objects above.
		waitErr := testenv.Wait(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
			perController, err = scrapeAll(ctx, targets)
			if err != nil {
				return false, err
			}
			exported = union(perController)
			return len(missing(sels, exported)) == 0, nil
		})
		if waitErr != nil && perController == nil {
			return waitErr
		}
		return nil
	}})
	if err != nil {
		t.Log(out.String())
	}
	require.NoError(t, err)

	for _, s := range missing(sels, exported) {
		t.Errorf("%s reads %s%v, which no controller exports with those labels", s.Where, s.Metric, s.Labels)
	}
	// client-go's names, as the usual mixins query them, from every controller.
	for _, name := range []string{"gate-controller", "health-controller", "commitstatus-controller", "promoter-controller", "rollback-controller"} {
		families := perController[name]
		require.NotNil(t, families, name)
		assert.ElementsMatch(t, []string{"name", "controller"}, labelNames(families["workqueue_depth"]), "%s: workqueue_depth{name, controller}", name)
		assert.Contains(t, families, "workqueue_adds_total", name)
		assert.Contains(t, families, "rest_client_requests_total", name)
		assert.Contains(t, families, "rest_client_request_duration_seconds", name)
		assert.Contains(t, families, "sluice_controller_reconcile_total", name)
		assert.Contains(t, families, "sluice_object_condition", name)
	}
	leader := perController["gate-controller (leader-elected)"]
	require.Contains(t, leader, "leader_election_master_status")
	assert.Equal(t, 1.0, leader["leader_election_master_status"].GetMetric()[0].GetGauge().GetValue(), "it holds its Lease")
}

// refusingAndRateLimitedSCM adds, beside the story's Gitea, an SCM that reports a rate-limit
// budget and one whose token is refused, so the SCM panels and alerts have series to read.
func refusingAndRateLimitedSCM(ctx context.Context, t *testing.T, s *demo.Story) error {
	const token = "ghp_monitoring_token_0123456789"
	github := scmtest.NewGitHub(t, token)
	github.AddRepo("acme", "app")
	github.SetQuota(1000, time.Hour)
	ns := s.Namespace
	kube, sluice := s.Env.Kube, s.Env.Sluice
	secrets := map[string]string{"monitoring-token": token, "monitoring-bad-token": "ghp_revoked_0000000000000000000000"}
	for name, value := range secrets {
		if _, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"token": value},
		}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "monitoring-ca"}, Data: map[string]string{"ca.crt": string(github.CAPEM)},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	for provider, secret := range map[string]string{"monitoring-github": "monitoring-token", "monitoring-refused": "monitoring-bad-token"} {
		if _, err := sluice.ScmV1alpha1().ScmProviders(ns).Create(ctx, &scmv1alpha1.ScmProvider{
			ObjectMeta: metav1.ObjectMeta{Name: provider},
			Spec: scmv1alpha1.ScmProviderSpec{
				Type: scmv1alpha1.ScmProviderGitHub, BaseURL: github.URL,
				SecretRef: &scmv1alpha1.LocalObjectReference{Name: secret},
				CABundle:  &scmv1alpha1.CABundleReference{Kind: "ConfigMap", Name: "monitoring-ca"},
			},
		}, metav1.CreateOptions{}); err != nil {
			return err
		}
		if _, err := sluice.ScmV1alpha1().ScmRepositories(ns).Create(ctx, &scmv1alpha1.ScmRepository{
			ObjectMeta: metav1.ObjectMeta{Name: provider + "-app"},
			Spec: scmv1alpha1.ScmRepositorySpec{
				URL:         "https://github.example.com/acme/app.git",
				ProviderRef: scmv1alpha1.LocalObjectReference{Name: provider},
				Owner:       "acme", Name: "app",
			},
		}, metav1.CreateOptions{}); err != nil {
			return err
		}
		if _, err := sluice.CommitstatusV1alpha1().CommitStatuses(ns).Create(ctx, &commitstatusv1alpha1.CommitStatus{
			ObjectMeta: metav1.ObjectMeta{Name: provider + "-health", Labels: map[string]string{commitstatusv1alpha1.KeyLabel: "monitoring"}},
			Spec: commitstatusv1alpha1.CommitStatusSpec{
				RepositoryRef: commitstatusv1alpha1.RepositoryReference{Name: provider + "-app"},
				SHA:           strings.Repeat("1", 40),
				Name:          "sluice/monitoring",
				Phase:         commitstatusv1alpha1.CommitStatusSuccess,
			},
		}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// startLeaderElected starts one more gate-controller, with leader election on and a label
// selector that matches nothing the story made, and returns its /metrics address.
func startLeaderElected(ctx context.Context, t *testing.T, bin string, s *demo.Story) (string, func(), error) {
	metrics, probes := freeAddr(t), freeAddr(t)
	log, err := os.Create(filepath.Join(t.TempDir(), "leader-elected.log"))
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(filepath.Join(bin, "gate-controller"),
		"--kubeconfig", s.Env.Kubeconfig, "--leader-elect", "--leader-election-namespace", s.Namespace,
		"--leader-election-id", "monitoring-test-leader", "--watch-label-selector", "sluice.dev/shard=monitoring-test",
		"--metrics-bind-address", metrics, "--health-probe-bind-address", probes, "--log-format", "text")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		_ = log.Close()
	}
	lease := s.Env.Kube.CoordinationV1().Leases(s.Namespace)
	err = testenv.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		l, err := lease.Get(ctx, "monitoring-test-leader", metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", nil
	})
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("the leader-elected gate-controller did not take its Lease: %w", err)
	}
	return metrics, stop, nil
}

func scrapeAll(ctx context.Context, targets map[string]string) (map[string]map[string]*dto.MetricFamily, error) {
	out := map[string]map[string]*dto.MetricFamily{}
	for name, addr := range targets {
		families, err := scrape(ctx, addr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = families
	}
	return out, nil
}

func scrape(ctx context.Context, addr string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	// The text format, as Prometheus falls back to, so the parser below reads what it reads.
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(strings.NewReader(string(body)))
}

// union returns every exported series name: a histogram also exports <name>_bucket, _sum and
// _count, a summary <name>_sum and _count, which is what expressions read.
func union(perController map[string]map[string]*dto.MetricFamily) map[string]*dto.MetricFamily {
	out := map[string]*dto.MetricFamily{}
	for _, families := range perController {
		for name, f := range families {
			names := []string{name}
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				names = append(names, name+"_bucket", name+"_sum", name+"_count")
			case dto.MetricType_SUMMARY:
				names = append(names, name+"_sum", name+"_count")
			}
			for _, n := range names {
				merged := &dto.MetricFamily{Name: f.Name, Type: f.Type, Metric: f.Metric}
				if existing, ok := out[n]; ok {
					merged.Metric = append(append([]*dto.Metric{}, existing.Metric...), f.Metric...)
				}
				out[n] = merged
			}
		}
	}
	return out
}

// missing returns the selectors whose metric is not exported, or not with every label they match.
func missing(sels []selector, exported map[string]*dto.MetricFamily) []selector {
	var out []selector
	for _, s := range sels {
		f, ok := exported[s.Metric]
		if !ok {
			out = append(out, s)
			continue
		}
		have := labelNames(f)
		if s.Metric != "" && strings.HasSuffix(s.Metric, "_bucket") {
			have = append(have, "le")
		}
		for _, l := range s.Labels {
			if !contains(have, l) {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

func labelNames(f *dto.MetricFamily) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if !seen[l.GetName()] {
				seen[l.GetName()] = true
				out = append(out, l.GetName())
			}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}
