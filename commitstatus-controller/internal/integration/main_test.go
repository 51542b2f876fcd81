// Package integration runs the commitstatus-controller in-process against the real local
// control plane, with a real Gitea and an in-process GitHub as SCMs.
package integration

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/setup"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
	"github.com/sluicehq/sluice/testenv"
)

var env *testenv.Env

// Only the CRDs this controller reads: the test does not depend on other groups being valid.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{SluiceCRDs: []string{
		"commitstatus.sluice.dev_commitstatuses.yaml",
		"scm.sluice.dev_scmrepositories.yaml",
		"scm.sluice.dev_scmproviders.yaml",
	}}, &env)
}

// running is a controller started in-process.
type running struct {
	m *manager.Manager
	// stop stops it before the test ends; later calls do nothing.
	stop func()
}

type controllerOptions struct {
	// config defaults to the admin config.
	config *rest.Config
	mutate func(*options.Options)
	setup  func(*setup.Config)
	logTo  io.Writer
}

// startController runs the commitstatus-controller with its own rate-limit registry until the
// test ends.
func startController(t testing.TB, o controllerOptions) *running {
	t.Helper()
	opts := options.Defaults("commitstatus-controller")
	opts.MetricsBindAddress = "0"
	opts.HealthProbeBindAddress = "0"
	opts.LeaderElectionNamespace = "default"
	if o.mutate != nil {
		o.mutate(&opts)
	}
	cfg := o.config
	if cfg == nil {
		cfg = env.Config
	}
	out := o.logTo
	if out == nil {
		out = io.Discard
		if os.Getenv("SLUICE_TEST_LOG") != "" {
			out = os.Stderr
		}
	}
	m, err := manager.New("commitstatus-controller", opts, cfg, slog.New(slog.NewTextHandler(out, nil)))
	require.NoError(t, err)
	sc := setup.Defaults()
	sc.Limiters = ratelimit.NewRegistry()
	sc.RecheckInterval = 2 * time.Second
	sc.CredentialsTTL = time.Second
	if o.setup != nil {
		o.setup(&sc)
	}
	require.NoError(t, setup.Setup(m, sc))
	return &running{m: m, stop: testenv.RunManager(t, m)}
}

var nsCounter atomic.Int64

func newNamespace(t testing.TB) string {
	t.Helper()
	ns := fmt.Sprintf("cs-%d-%d", time.Now().UnixNano()%1_000_000, nsCounter.Add(1))
	_, err := env.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return ns
}

func createSecret(t testing.TB, ns, name string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
	_, err := env.Kube.CoreV1().Secrets(ns).Create(context.Background(), s, metav1.CreateOptions{})
	require.NoError(t, err)
}

func createProvider(t testing.TB, ns string, p *scmv1alpha1.ScmProvider) {
	t.Helper()
	p.Namespace = ns
	_, err := env.Sluice.ScmV1alpha1().ScmProviders(ns).Create(context.Background(), p, metav1.CreateOptions{})
	require.NoError(t, err)
}

func createRepository(t testing.TB, ns, name, provider, owner, repoName, url string) {
	t.Helper()
	r := &scmv1alpha1.ScmRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: scmv1alpha1.ScmRepositorySpec{
			URL: url, AllowInsecureLoopbackHTTP: true,
			ProviderRef: scmv1alpha1.LocalObjectReference{Name: provider},
			Owner:       owner, Name: repoName,
		},
	}
	_, err := env.Sluice.ScmV1alpha1().ScmRepositories(ns).Create(context.Background(), r, metav1.CreateOptions{})
	require.NoError(t, err)
}

func newCommitStatus(ns, name, repo, sha string, phase commitstatusv1alpha1.CommitStatusPhase) *commitstatusv1alpha1.CommitStatus {
	return &commitstatusv1alpha1.CommitStatus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{commitstatusv1alpha1.KeyLabel: "health"}},
		Spec: commitstatusv1alpha1.CommitStatusSpec{
			RepositoryRef: commitstatusv1alpha1.RepositoryReference{Name: repo},
			SHA:           sha,
			Name:          "sluice/health",
			Description:   "healthy in staging",
			Phase:         phase,
			URL:           "https://dash.example.com/staging",
		},
	}
}

func createCommitStatus(t testing.TB, cs *commitstatusv1alpha1.CommitStatus) {
	t.Helper()
	_, err := env.Sluice.CommitstatusV1alpha1().CommitStatuses(cs.Namespace).Create(context.Background(), cs, metav1.CreateOptions{})
	require.NoError(t, err)
}

func updateCommitStatus(t testing.TB, ns, name string, mutate func(*commitstatusv1alpha1.CommitStatus)) {
	t.Helper()
	_, err := testenv.Update(context.Background(), env.Sluice.CommitstatusV1alpha1().CommitStatuses(ns), name, mutate)
	require.NoError(t, err)
}

// waitFor polls the CommitStatus until cond holds, and returns it.
func waitFor(t testing.TB, ns, name string, cond func(*commitstatusv1alpha1.CommitStatus) bool) *commitstatusv1alpha1.CommitStatus {
	t.Helper()
	return testenv.WaitForObject(t, 30*time.Second, env.Sluice.CommitstatusV1alpha1().CommitStatuses(ns), name, cond)
}

// synced is true once the SCM holds phase for the object's current generation.
func synced(phase commitstatusv1alpha1.CommitStatusPhase) func(*commitstatusv1alpha1.CommitStatus) bool {
	return func(cs *commitstatusv1alpha1.CommitStatus) bool {
		ready := conditions.Get(cs.Status.Conditions, conditions.Ready)
		return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == cs.Generation &&
			cs.Status.SyncedPhase == phase
	}
}

func stalled(reason string) func(*commitstatusv1alpha1.CommitStatus) bool {
	return func(cs *commitstatusv1alpha1.CommitStatus) bool {
		ready := conditions.Get(cs.Status.Conditions, conditions.Ready)
		return conditions.IsTrue(cs.Status.Conditions, conditions.Stalled) && ready != nil && ready.Reason == reason
	}
}
