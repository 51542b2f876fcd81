package integration

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/promoter-controller/internal/setup"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/charts"
)

const (
	logCRDsMissing   = "CRDs of other charts are not installed; what needs them waits, and says so in its status"
	logCRDInstalled  = "CRD installed; reading its kind"
	crdsMissingStart = "the CRDs scmrepositories.scm.sluice.dev, scmproviders.scm.sluice.dev, "
)

// The promoter chart installed alone on an empty cluster (its own CRDs, nothing else) runs as
// its ServiceAccount and becomes ready; each object says which CRDs are missing and which chart
// installs them, and the log says it once. Installing the other charts' CRDs later, as their
// charts with replicaCount=0, is picked up without a restart: their informers deliver events.
func TestMissingCRDsAreReportedThenPickedUp(t *testing.T) {
	testenv.SkipIfShort(t)
	alone, err := testenv.Start(testenv.Options{WithoutSluiceCRDs: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = alone.Stop() })
	ctx := context.Background()
	const system = "sluice-system"
	charts.InstallForTest(t, alone, "promoter-controller", system, "promoter-controller", "crds.enabled=true")
	logs := &logLines{}
	m, _ := startPromoterLogging(t, alone.Impersonate(system, "promoter-controller"), setup.Config{CacheDir: t.TempDir()}, nil, logs)
	requireReady(ctx, t, m)

	const ns = "default"
	strategy, pullRequest := createWithoutPeers(ctx, t, alone, ns)
	requireStalled(ctx, t, strategy, "CRDMissing", crdsMissingStart+"gates.gating.sluice.dev are not installed: "+
		"install the commitstatus-controller and gate-controller charts (replicaCount: 0 installs the CRDs alone)")
	requireStalled(ctx, t, pullRequest, "CRDMissing", crdsMissingStart[:len(crdsMissingStart)-2]+" are not installed: "+
		"install the commitstatus-controller chart")
	saidMissing := requireMissingSaidOnce(ctx, t, alone, ns, logs)

	charts.InstallForTest(t, alone, "commitstatus-controller", system, "commitstatus-controller", "crds.enabled=true", "replicaCount=0")
	requireStalled(ctx, t, strategy, "CRDMissing", "the CRD gates.gating.sluice.dev is not installed: install the gate-controller chart")
	requireStalled(ctx, t, pullRequest, "InvalidConfiguration", `ScmRepository "app" does not exist`)
	// The ScmRepository informer, started when its CRD came, brings the PullRequest back at once.
	_, err = alone.Sluice.ScmV1alpha1().ScmRepositories(ns).Create(ctx, &scmv1alpha1.ScmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: scmv1alpha1.ScmRepositorySpec{URL: "https://git.example.com/team/app.git", Owner: "team", Name: "app",
			ProviderRef: scmv1alpha1.LocalObjectReference{Name: "git"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	requireStalled(ctx, t, pullRequest, "InvalidConfiguration", `ScmProvider "git", named by ScmRepository "app", does not exist`)

	charts.InstallForTest(t, alone, "gate-controller", system, "gate-controller", "crds.enabled=true", "replicaCount=0")
	requireStalled(ctx, t, strategy, "InvalidConfiguration", `ScmProvider "git", named by ScmRepository "app", does not exist`)
	for _, resource := range []string{"scmrepositories.scm.sluice.dev", "scmproviders.scm.sluice.dev", "commitstatuses.commitstatus.sluice.dev", "gates.gating.sluice.dev"} {
		assert.Len(t, logs.with(logCRDInstalled+" resource="+resource), 1, "the log says once that %s came", resource)
	}
	assert.Len(t, logs.with(logCRDsMissing), saidMissing, "and never again that CRDs are missing")
}

// createWithoutPeers creates, in namespace ns of cluster, a strategy whose environments need a Gate
// and a pull request of a revert, and returns how to read their conditions.
func createWithoutPeers(ctx context.Context, t *testing.T, cluster *testenv.Env, ns string) (strategy, pullRequest func(context.Context) ([]metav1.Condition, error)) {
	t.Helper()
	strategies, pullRequests := cluster.Sluice.PromoterV1alpha1().PromotionStrategies(ns), cluster.Sluice.PromoterV1alpha1().PullRequests(ns)
	_, err := strategies.Create(ctx, &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: promoterv1alpha1.PromotionStrategySpec{
			RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, DryBranch: "main",
			Environments: []promoterv1alpha1.Environment{{Branch: "dev"}, {Branch: "prod", Gates: &promoterv1alpha1.GateSelector{
				Refs: []promoterv1alpha1.GateReference{{Name: "prod-freeze"}}}}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = pullRequests.Create(ctx, &promoterv1alpha1.PullRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "revert"},
		Spec: promoterv1alpha1.PullRequestSpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, Title: "Revert",
			SourceBranch: "prod-revert", TargetBranch: "prod"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	strategy = func(ctx context.Context) ([]metav1.Condition, error) {
		ps, err := strategies.Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return ps.Status.Conditions, nil
	}
	pullRequest = func(ctx context.Context) ([]metav1.Condition, error) {
		pr, err := pullRequests.Get(ctx, "revert", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return pr.Status.Conditions, nil
	}
	return strategy, pullRequest
}

// requireMissingSaidOnce asserts that the stalls were announced as Warning Events, and that the
// log said once which Sluice CRDs are missing and once that Flux's GitRepository is: it returns
// how many such lines the log holds.
func requireMissingSaidOnce(ctx context.Context, t *testing.T, cluster *testenv.Env, ns string, logs *logLines) int {
	t.Helper()
	events, err := cluster.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=CRDMissing"})
	require.NoError(t, err)
	require.NotEmpty(t, events.Items, "the stalls are announced")
	for _, e := range events.Items {
		assert.Equal(t, corev1.EventTypeWarning, e.Type)
	}
	// One line for Sluice's peer charts, one for Flux's GitRepository (merges wake Flux once it
	// is installed): each said once.
	var sluiceCRDs, fluxCRD []string
	for _, line := range logs.with(logCRDsMissing) {
		if strings.Contains(line, "(Flux's source-controller)") {
			fluxCRD = append(fluxCRD, line)
		} else {
			sluiceCRDs = append(sluiceCRDs, line)
		}
	}
	require.Len(t, sluiceCRDs, 1, "the log says once which CRDs are missing; it said %q", logs.all())
	assert.Contains(t, sluiceCRDs[0], "install the commitstatus-controller, gate-controller and rollback-controller charts")
	assert.Len(t, fluxCRD, 1, "the log says once that Flux's GitRepository CRD is missing; it said %q", logs.all())
	return len(sluiceCRDs) + len(fluxCRD)
}

// requireStalled waits until get's Stalled condition has reason and a message containing message.
func requireStalled(ctx context.Context, t *testing.T, get func(context.Context) ([]metav1.Condition, error), reason, message string) {
	t.Helper()
	var last []metav1.Condition
	require.NoError(t, testenv.Wait(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		var err error
		last, err = get(ctx)
		c := conditions.Get(last, conditions.Stalled)
		return c != nil && c.Reason == reason && strings.Contains(c.Message, message), err
	}), "Stalled %s containing %q; last conditions %+v", reason, message, last)
}

// requireReady waits until the manager's /readyz answers 200, as the kubelet's probe asks it.
func requireReady(ctx context.Context, t *testing.T, m *manager.Manager) {
	t.Helper()
	addrs, err := m.Probes.Addrs(ctx)
	require.NoError(t, err)
	var status string
	require.NoError(t, testenv.Wait(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addrs.Probes+"/readyz", nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			status = err.Error()
			return false, nil
		}
		_ = resp.Body.Close()
		status = resp.Status
		return resp.StatusCode == http.StatusOK, nil
	}), "/readyz answers 200; it answered %s", status)
}

// logLines keeps every record a logger was told, as "message key=value ...".
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logLines) WithGroup(string) slog.Handler            { return l }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	line := r.Message
	r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
	return nil
}

func (l *logLines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// with returns the lines that start with prefix.
func (l *logLines) with(prefix string) []string {
	var out []string
	for _, line := range l.all() {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return out
}
