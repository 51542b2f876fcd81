package manifestrelease_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/rollback-controller/internal/setup"
	"github.com/sluicehq/sluice/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{}, &env)
}

// fixture is a namespace of its own, a controller watching it, and the test playing the
// Deployment and Job controllers the local control plane lacks.
type fixture struct {
	t   *testing.T
	ctx context.Context
	ns  string
	// jobOutcome decides each test Job: "pass", "fail", or "" to leave it running.
	mu         sync.Mutex
	jobOutcome func(job *batchv1.Job) string
	// notReady names Deployments the test's deployment controller never reports ready.
	notReady map[string]bool
	manager  *manager.Manager
}

// fastClients replaces the control plane's admin clients (client-go's 5 requests/s) with ones
// that let the test's controller stand-ins and its waits run side by side unthrottled.
var fastClients sync.Once

func newFixture(t *testing.T) *fixture {
	t.Helper()
	testenv.SkipIfShort(t)
	fastClients.Do(func() {
		cfg := rest.CopyConfig(env.Config)
		cfg.QPS, cfg.Burst = 200, 400
		env.Kube = kubernetes.NewForConfigOrDie(cfg)
		env.Sluice = sluice.NewForConfigOrDie(cfg)
		env.Dynamic = dynamic.NewForConfigOrDie(cfg)
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &fixture{t: t, ctx: ctx, ns: fmt.Sprintf("mr-%d", time.Now().UnixNano()%1_000_000_000), notReady: map[string]bool{}}
	f.jobOutcome = func(*batchv1.Job) string { return "pass" }
	_, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	go f.playControllers()
	return f
}

// start runs the controller in-process, watching the fixture's namespace, until the test ends.
func (f *fixture) start(mutate func(*setup.Config), as ...*rest.Config) {
	f.t.Helper()
	cfg := env.Config
	if len(as) > 0 {
		cfg = as[0]
	}
	f.manager = startController(f.t, cfg, f.ns, mutate)
}

func startController(t testing.TB, cfg *rest.Config, ns string, mutate func(*setup.Config)) *manager.Manager {
	t.Helper()
	return startControllerWith(t, cfg, ns, nil, mutate)
}

// startControllerWith is startController with the shared flags changed by mutateOpts.
func startControllerWith(t testing.TB, cfg *rest.Config, ns string, mutateOpts func(*options.Options), mutate func(*setup.Config)) *manager.Manager {
	t.Helper()
	opts := options.Defaults("rollback-controller")
	opts.MetricsBindAddress, opts.HealthProbeBindAddress, opts.LeaderElect = "0", "0", false
	opts.Namespace = ns
	if mutateOpts != nil {
		mutateOpts(&opts)
	}
	logs := &logBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("controller log:\n%s", logs.tail(80))
		}
	})
	m, err := manager.New("rollback-controller", opts, cfg, slog.New(slog.NewTextHandler(logs, nil)))
	require.NoError(t, err)
	rcfg := setup.Defaults()
	rcfg.ManifestGitCacheDir, rcfg.ReleaseRecheck = t.TempDir(), 500*time.Millisecond
	// Cluster-wide mode: these tests are about what a release does, so a release that names no
	// ServiceAccount acts with the controller's rights. The tests of who a release acts as set
	// the ServiceAccount, or the binary's default, themselves.
	rcfg.DefaultServiceAccount = ""
	if mutate != nil {
		mutate(&rcfg)
	}
	require.NoError(t, rcfg.Validate())
	require.NoError(t, setup.ManifestReleases(m, rcfg))
	testenv.RunManager(t, m)
	return m
}

// logBuffer keeps the controller's log, printed when a test fails.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (b *logBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines[max(0, len(b.lines)-n):], "\n")
}

// playControllers stands in for the Deployment and Job controllers, which the local control
// plane does not run: it reports Deployments rolled out and decides test Jobs, as they appear.
func (f *fixture) playControllers() {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-tick.C:
		}
		f.rollOutDeployments()
		f.finishJobs()
	}
}

func (f *fixture) rollOutDeployments() {
	list, err := env.Kube.AppsV1().Deployments(f.ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range list.Items {
		d := &list.Items[i]
		if f.notReady[d.Name] || d.Status.ObservedGeneration == d.Generation {
			continue
		}
		replicas := int32(1)
		if d.Spec.Replicas != nil {
			replicas = *d.Spec.Replicas
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: replicas, UpdatedReplicas: replicas,
			ReadyReplicas: replicas, AvailableReplicas: replicas, Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
			}}
		_, _ = env.Kube.AppsV1().Deployments(f.ns).UpdateStatus(f.ctx, d, metav1.UpdateOptions{})
	}
}

func (f *fixture) finishJobs() {
	list, err := env.Kube.BatchV1().Jobs(f.ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for i := range list.Items {
		job := &list.Items[i]
		if len(job.Status.Conditions) > 0 || job.DeletionTimestamp != nil {
			continue
		}
		f.mu.Lock()
		outcome := f.jobOutcome(job)
		f.mu.Unlock()
		now := metav1.Now()
		switch outcome {
		case "pass":
			job.Status = batchv1.JobStatus{StartTime: &now, CompletionTime: &now, Succeeded: 1, Conditions: []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
			}}
		case "fail":
			job.Status = batchv1.JobStatus{StartTime: &now, Failed: 1, Conditions: []batchv1.JobCondition{
				{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
				{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
			}}
		default:
			continue
		}
		if _, err := env.Kube.BatchV1().Jobs(f.ns).UpdateStatus(f.ctx, job, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			f.t.Logf("play the Job controller for %s: %v", job.Name, err)
		}
	}
}

func (f *fixture) setJobOutcome(fn func(*batchv1.Job) string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobOutcome = fn
}

func (f *fixture) setNotReady(name string, broken bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notReady[name] = broken
}

// configMap creates or replaces a ConfigMap of the fixture's namespace.
func (f *fixture) configMap(name string, data map[string]string) {
	f.t.Helper()
	cms := env.Kube.CoreV1().ConfigMaps(f.ns)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, Data: data}
	_, err := cms.Create(f.ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = cms.Update(f.ctx, cm, metav1.UpdateOptions{})
	}
	require.NoError(f.t, err)
}

func (f *fixture) createRelease(name string, spec rollbackv1.ManifestReleaseSpec) {
	f.t.Helper()
	_, err := env.Sluice.RollbackV1alpha1().ManifestReleases(f.ns).Create(f.ctx, &rollbackv1.ManifestRelease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, Spec: spec}, metav1.CreateOptions{})
	require.NoError(f.t, err)
}

func (f *fixture) release(name string) *rollbackv1.ManifestRelease {
	f.t.Helper()
	mr, err := env.Sluice.RollbackV1alpha1().ManifestReleases(f.ns).Get(f.ctx, name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return mr
}

// updateRelease changes the release's spec or metadata, reading again on a conflict.
func (f *fixture) updateRelease(name string, mutate func(*rollbackv1.ManifestRelease)) {
	f.t.Helper()
	_, err := testenv.Update(f.ctx, env.Sluice.RollbackV1alpha1().ManifestReleases(f.ns), name, mutate)
	require.NoError(f.t, err)
}

// waitFor waits until cond holds.
func (f *fixture) waitFor(what string, cond func() bool) {
	f.t.Helper()
	require.NoError(f.t, testenv.Wait(f.ctx, 3*time.Minute, func(context.Context) (bool, error) { return cond(), nil }), "waiting for %s", what)
}

// annotate sets an annotation on the release, which brings it back to the controller at once.
func (f *fixture) annotate(name, key, value string) {
	f.t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	_, err := env.Sluice.RollbackV1alpha1().ManifestReleases(f.ns).Patch(f.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(f.t, err)
}

// refresh asks for the source to be read again now, as `flux reconcile` would, and waits until
// the controller has acted on it.
func (f *fixture) refresh(name string) *rollbackv1.ManifestRelease {
	f.t.Helper()
	token := time.Now().Format(time.RFC3339Nano)
	f.annotate(name, rollbackv1.RequestedAtAnnotation, token)
	return f.waitRelease(name, "the refresh "+token+" handled", func(mr *rollbackv1.ManifestRelease) bool {
		return mr.Status.LastHandledReconcileAt == token
	})
}

// waitRelease waits until cond holds for the release, and returns it.
func (f *fixture) waitRelease(name, what string, cond func(*rollbackv1.ManifestRelease) bool) *rollbackv1.ManifestRelease {
	f.t.Helper()
	var last *rollbackv1.ManifestRelease
	err := testenv.Wait(f.ctx, 3*time.Minute, func(ctx context.Context) (bool, error) {
		mr, err := env.Sluice.RollbackV1alpha1().ManifestReleases(f.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = mr
		return cond(mr), nil
	})
	require.NoError(f.t, err, "waiting for %s; last status: %s", what, describeStatus(last))
	return last
}

func describeStatus(mr *rollbackv1.ManifestRelease) string {
	if mr == nil {
		return "none"
	}
	var parts []string
	for _, c := range mr.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	op := "none"
	if o := mr.Status.Operation; o != nil {
		op = fmt.Sprintf("%s to %d", o.Action, o.Number)
	}
	return fmt.Sprintf("generation %d observed %d, number %d, deployed %q, operation %s, conditions %s", mr.Generation, mr.Status.ObservedGeneration, mr.Status.UpgradeNumber, mr.Status.DeployedVersion, op, strings.Join(parts, "; "))
}

// deployed is true once number is the deployed snapshot and nothing is under way.
func deployed(number int64) func(*rollbackv1.ManifestRelease) bool {
	return func(mr *rollbackv1.ManifestRelease) bool {
		return mr.Status.Operation == nil && mr.Status.UpgradeNumber == number && mr.Status.ObservedGeneration == mr.Generation &&
			(conditions.IsTrue(mr.Status.Conditions, conditions.Ready) || conditions.IsTrue(mr.Status.Conditions, rollbackv1.ConditionRolledBack))
	}
}

// rolledBackFrom is true once the attempt at snapshot failed and was rolled back.
func rolledBackFrom(failed int64) func(*rollbackv1.ManifestRelease) bool {
	return func(mr *rollbackv1.ManifestRelease) bool {
		return mr.Status.Operation == nil && conditions.IsTrue(mr.Status.Conditions, rollbackv1.ConditionRolledBack) &&
			len(mr.Status.History) > 0 && mr.Status.History[0].Number == failed && mr.Status.History[0].RolledBack
	}
}

func condition(mr *rollbackv1.ManifestRelease, t string) metav1.Condition {
	if c := conditions.Get(mr.Status.Conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{Type: t, Status: "absent"}
}

// snapshotNumbers lists the snapshot heads kept for a release.
func (f *fixture) snapshotNumbers(release string) []int64 {
	f.t.Helper()
	list, err := env.Kube.CoreV1().Secrets(f.ns).List(f.ctx, metav1.ListOptions{LabelSelector: labels.Set{
		snapshot.LabelRelease: release, snapshot.LabelChunk: "0"}.String()})
	require.NoError(f.t, err)
	var numbers []int64
	for _, s := range list.Items {
		info, err := snapshot.InfoOf(&s)
		require.NoError(f.t, err)
		numbers = append(numbers, info.Number)
	}
	slices.Sort(numbers)
	return numbers
}

// liveObjects lists "Kind/name" of the objects of a release in the namespace, of the kinds the
// tests use.
func (f *fixture) liveObjects(release string) []string {
	f.t.Helper()
	selector := labels.Set{rollbackv1.ReleaseNameLabel: release, rollbackv1.ReleaseNamespaceLabel: f.ns}.String()
	var out []string
	cms, err := env.Kube.CoreV1().ConfigMaps(f.ns).List(f.ctx, metav1.ListOptions{LabelSelector: selector})
	require.NoError(f.t, err)
	for _, o := range cms.Items {
		out = append(out, "ConfigMap/"+o.Name)
	}
	deps, err := env.Kube.AppsV1().Deployments(f.ns).List(f.ctx, metav1.ListOptions{LabelSelector: selector})
	require.NoError(f.t, err)
	for _, o := range deps.Items {
		out = append(out, "Deployment/"+o.Name)
	}
	jobs, err := env.Kube.BatchV1().Jobs(f.ns).List(f.ctx, metav1.ListOptions{LabelSelector: selector})
	require.NoError(f.t, err)
	for _, o := range jobs.Items {
		out = append(out, "Job/"+o.Name)
	}
	slices.Sort(out)
	return out
}

func (f *fixture) deploymentImage(name string) string {
	f.t.Helper()
	d, err := env.Kube.AppsV1().Deployments(f.ns).Get(f.ctx, name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return d.Spec.Template.Spec.Containers[0].Image
}

// events returns the reasons and messages of the Events about a release.
func (f *fixture) events(release string) []string {
	f.t.Helper()
	list, err := env.Kube.CoreV1().Events(f.ns).List(f.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + release})
	require.NoError(f.t, err)
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Reason+": "+e.Message)
	}
	return out
}

// app renders a version of a small application: a Deployment, its config, and any extra
// ConfigMaps.
func app(image string, extra ...string) map[string]string {
	files := map[string]string{
		"deployment.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: %s
`, image),
		"config.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  image: %q\n", image),
	}
	for _, name := range extra {
		files[name+".yaml"] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  from: %q\n", name, image)
	}
	return files
}

// smokeTest is a test definition: a Job that would check the app.
const smokeTest = `apiVersion: batch/v1
kind: Job
metadata:
  name: smoke
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: smoke
          image: curlimages/curl:8.10.1
          args: ["-fsS", "http://web/healthz"]
`

// failWhenImage fails test Jobs while the web Deployment runs an image containing bad.
func (f *fixture) failWhenImage(bad string) func(*batchv1.Job) string {
	return func(*batchv1.Job) string {
		d, err := env.Kube.AppsV1().Deployments(f.ns).Get(f.ctx, "web", metav1.GetOptions{})
		if err != nil {
			return ""
		}
		if strings.Contains(d.Spec.Template.Spec.Containers[0].Image, bad) {
			return "fail"
		}
		return "pass"
	}
}

func configMapSource(names ...string) rollbackv1.ManifestSource {
	src := rollbackv1.ManifestSource{}
	for _, n := range names {
		src.ConfigMaps = append(src.ConfigMaps, rollbackv1.ConfigMapReference{Name: n})
	}
	return src
}

func smokeTests(ignoreFailures bool) *rollbackv1.ReleaseTest {
	return &rollbackv1.ReleaseTest{Enable: true, IgnoreFailures: ignoreFailures,
		DefinitionsFrom: []rollbackv1.TestDefinitionReference{{Kind: "ConfigMap", Name: "tests", Key: "smoke.yaml"}}}
}

func seconds(n int) *metav1.Duration {
	return &metav1.Duration{Duration: time.Duration(n) * time.Second}
}
