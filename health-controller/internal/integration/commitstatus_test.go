package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

const (
	shaA = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"
	shaB = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2"
)

// waitCommitStatus waits until the CommitStatus exists and cond holds.
func waitCommitStatus(t *testing.T, ns, name string, cond func(*commitstatusv1alpha1.CommitStatus) bool) *commitstatusv1alpha1.CommitStatus {
	t.Helper()
	var last *commitstatusv1alpha1.CommitStatus
	err := testenv.Wait(context.Background(), 30*time.Second, func(ctx context.Context) (bool, error) {
		cs, err := env.Sluice.CommitstatusV1alpha1().CommitStatuses(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = cs
		return cond(cs), nil
	})
	if err != nil {
		var b []byte
		if last != nil {
			b, _ = yaml.Marshal(last.Spec)
		}
		hc, _ := env.Sluice.HealthV1alpha1().HealthChecks(ns).Get(context.Background(), name, metav1.GetOptions{})
		var hb []byte
		if hc != nil {
			hb, _ = yaml.Marshal(hc.Status)
		}
		require.NoError(t, err, "CommitStatus %s/%s; last spec:\n%s\nHealthCheck status:\n%s", ns, name, b, hb)
	}
	return last
}

func phaseFor(sha string, phase commitstatusv1alpha1.CommitStatusPhase) func(*commitstatusv1alpha1.CommitStatus) bool {
	return func(cs *commitstatusv1alpha1.CommitStatus) bool { return cs.Spec.SHA == sha && cs.Spec.Phase == phase }
}

func kustomization(ns, revision string, inventory ...string) string {
	var entries []string
	for _, id := range inventory {
		entries = append(entries, fmt.Sprintf("{id: %s, v: v1}", id))
	}
	return fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps}
spec: {interval: 5m, path: ./apps/staging, prune: true, sourceRef: {kind: GitRepository, name: app}}
status:
  observedGeneration: 1
  lastAppliedRevision: "main@sha1:%s"
  inventory: {entries: [%s]}`, revision, strings.Join(entries, ", "))
}

// The health of what a Flux Kustomization applied is published as a CommitStatus for the commit
// it applied: pending, then success; then a new commit whose rollout fails gets a failure.
func TestCommitStatusFromFluxKustomizationRevision(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ns := newNamespace(t)
	startController(t, ns, nil, nil)
	createDeployment(t, ns, "web", nil)
	create(t, certificates, ns, `{apiVersion: cert-manager.io/v1, kind: Certificate, metadata: {name: web-tls}, spec: {secretName: web-tls}}`)
	inventory := []string{ns + "_web_apps_Deployment", ns + "_web-tls_cert-manager.io_Certificate", ns + "_web-db__Secret"}
	create(t, flux.Kustomizations, ns, kustomization(ns, shaA, inventory...))
	createHC(t, ns, `
metadata: {name: staging}
spec:
  targets:
  - kustomization: {name: apps}
  timeout: 10m
  commitStatus:
    key: health-staging
    repositoryRef: {name: app}
    url: https://grafana.example.com/d/staging
    revision:
      kustomization: {name: apps}`)

	cs := waitCommitStatus(t, ns, "staging", phaseFor(shaA, commitstatusv1alpha1.CommitStatusPending))
	assert.Equal(t, "health-staging", cs.Labels[commitstatusv1alpha1.KeyLabel])
	assert.Equal(t, "health-staging", cs.Spec.Name, "the SCM context defaults to the key")
	assert.Equal(t, "app", cs.Spec.RepositoryRef.Name)
	assert.Equal(t, "https://grafana.example.com/d/staging", cs.Spec.URL)
	assert.Contains(t, cs.Spec.Description, "In progress")
	hc := waitHC(t, ns, "staging", func(hc *healthv1alpha1.HealthCheck) bool { return hc.Status.Counts.Total == 3 })
	assert.Equal(t, "main@sha1:"+shaA, hc.Status.ObservedRevision)
	secret, _ := resource(hc, "Secret", "web-db")
	assert.Equal(t, healthv1alpha1.StatusCurrent, secret.Status, "Secrets in an inventory are counted, never read")
	require.True(t, metav1.IsControlledBy(cs, hc), "the CommitStatus belongs to the HealthCheck")

	rolledOut(t, ns, "web")
	setStatus(t, certificates, ns, "web-tls", `{conditions: [{type: Ready, status: "True", observedGeneration: 1}]}`)
	cs = waitCommitStatus(t, ns, "staging", phaseFor(shaA, commitstatusv1alpha1.CommitStatusSuccess))
	assert.Equal(t, "Healthy: 3/3 Current", cs.Spec.Description)
	hc = waitHC(t, ns, "staging", ready)
	assert.Equal(t, "main@sha1:"+shaA, hc.Status.LastHealthyRevision)
	published := conditions.Get(hc.Status.Conditions, healthv1alpha1.ConditionCommitStatusPublished)
	require.NotNil(t, published)
	assert.Equal(t, metav1.ConditionTrue, published.Status)

	// Flux applies commit B: the Deployment's template changes, then lastAppliedRevision moves.
	bumpImage(t, ns, "web", "ghcr.io/example/web:2.0.0")
	setStatus(t, flux.Kustomizations, ns, "apps", fmt.Sprintf(`{observedGeneration: 1, lastAppliedRevision: "main@sha1:%s", inventory: {entries: [%s]}}`,
		shaB, "{id: "+strings.Join(inventory, ", v: v1}, {id: ")+", v: v1}"))
	waitCommitStatus(t, ns, "staging", phaseFor(shaB, commitstatusv1alpha1.CommitStatusPending))

	progressDeadlineExceeded(t, ns, "web")
	cs = waitCommitStatus(t, ns, "staging", phaseFor(shaB, commitstatusv1alpha1.CommitStatusFailure))
	assert.Contains(t, cs.Spec.Description, "Failed: 1 Failed")
	hc = waitHC(t, ns, "staging", func(hc *healthv1alpha1.HealthCheck) bool { return readyReason(hc) == healthv1alpha1.ReasonFailed })
	assert.Equal(t, "main@sha1:"+shaA, hc.Status.LastHealthyRevision, "A stays the last healthy revision")

	list, err := env.Sluice.CommitstatusV1alpha1().CommitStatuses(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list.Items, 1, "one CommitStatus per HealthCheck, moved to the running commit")

	// Dropping spec.commitStatus removes the CommitStatus: a stale verdict must not linger.
	updateHC(t, ns, "staging", func(hc *healthv1alpha1.HealthCheck) { hc.Spec.CommitStatus = nil })
	require.NoError(t, testenv.Wait(context.Background(), 30*time.Second, func(ctx context.Context) (bool, error) {
		l, err := env.Sluice.CommitstatusV1alpha1().CommitStatuses(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0, err
	}))
}

// Argo CD Applications: status.resources are the targets, status.sync.revision the commit.
func TestCommitStatusFromArgoApplication(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ns := newNamespace(t)
	startController(t, ns, nil, nil)
	createDeployment(t, ns, "guestbook-ui", nil)
	create(t, applications, ns, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: guestbook}
spec: {project: default, source: {repoURL: "https://git.example.com/guestbook.git", path: guestbook}}
status:
  sync: {status: Synced, revision: %q}
  resources:
  - {group: apps, version: v1, kind: Deployment, namespace: %s, name: guestbook-ui, status: Synced, health: {status: Progressing}}
  - {version: v1, kind: Service, namespace: %s, name: guestbook-ui, status: OutOfSync}`, shaA, ns, ns))
	createHC(t, ns, `
metadata: {name: guestbook}
spec:
  targets:
  - application: {name: guestbook}
  commitStatus:
    key: argocd-health
    name: sluice/health
    repositoryRef: {name: guestbook}
    revision:
      application: {name: guestbook}`)

	hc := waitHC(t, ns, "guestbook", hasResource("Service", "guestbook-ui", healthv1alpha1.StatusNotFound))
	assert.Equal(t, shaA, hc.Status.ObservedRevision)
	waitCommitStatus(t, ns, "guestbook", phaseFor(shaA, commitstatusv1alpha1.CommitStatusPending))

	// The Service is created by the sync; the Deployment rolls out.
	_, err := env.Kube.CoreV1().Services(ns).Create(context.Background(), service(ns, "guestbook-ui"), metav1.CreateOptions{})
	require.NoError(t, err)
	rolledOut(t, ns, "guestbook-ui")
	cs := waitCommitStatus(t, ns, "guestbook", phaseFor(shaA, commitstatusv1alpha1.CommitStatusSuccess))
	assert.Equal(t, "sluice/health", cs.Spec.Name)
}

// The timeout turns a rollout that does not finish into a failure; the soak time holds success
// back until the set has stayed healthy long enough.
func TestTimeoutAndSoakTime(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ns := newNamespace(t)
	startController(t, ns, nil, nil)
	createDeployment(t, ns, "stuck", nil)
	createDeployment(t, ns, "steady", nil)
	rolledOut(t, ns, "steady")
	createHC(t, ns, fmt.Sprintf(`
metadata: {name: stuck}
spec:
  targets: [{object: {apiVersion: apps/v1, kind: Deployment, name: stuck}}]
  timeout: 2s
  commitStatus: {key: health, repositoryRef: {name: app}, revision: {fixed: %q}}`, shaA))
	createHC(t, ns, fmt.Sprintf(`
metadata: {name: steady}
spec:
  targets: [{object: {apiVersion: apps/v1, kind: Deployment, name: steady}}]
  soakTime: 2s
  commitStatus: {key: health, repositoryRef: {name: app}, revision: {fixed: %q}}`, shaA))

	hc := waitHC(t, ns, "steady", func(hc *healthv1alpha1.HealthCheck) bool { return readyReason(hc) == healthv1alpha1.ReasonSoaking })
	assert.False(t, hc.Status.Healthy)
	assert.NotNil(t, hc.Status.HealthySince)
	waitCommitStatus(t, ns, "steady", phaseFor(shaA, commitstatusv1alpha1.CommitStatusPending))
	hc = waitHC(t, ns, "steady", ready)
	assert.Equal(t, healthv1alpha1.ReasonHealthy, readyReason(hc))
	waitCommitStatus(t, ns, "steady", phaseFor(shaA, commitstatusv1alpha1.CommitStatusSuccess))

	hc = waitHC(t, ns, "stuck", func(hc *healthv1alpha1.HealthCheck) bool { return readyReason(hc) == healthv1alpha1.ReasonTimedOut })
	r, _ := resource(hc, "Deployment", "stuck")
	assert.Equal(t, healthv1alpha1.StatusFailed, r.Status)
	assert.Contains(t, r.Message, "still in progress after the 2s timeout")
	cs := waitCommitStatus(t, ns, "stuck", phaseFor(shaA, commitstatusv1alpha1.CommitStatusFailure))
	assert.Contains(t, cs.Spec.Description, "Timed out")
}

// A CommitStatus with the HealthCheck's name that someone else wrote is never taken over.
func TestCommitStatusNameConflictIsReported(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ns := newNamespace(t)
	startController(t, ns, nil, nil)
	_, err := env.Sluice.CommitstatusV1alpha1().CommitStatuses(ns).Create(context.Background(), &commitstatusv1alpha1.CommitStatus{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: commitstatusv1alpha1.CommitStatusSpec{RepositoryRef: commitstatusv1alpha1.RepositoryReference{Name: "app"}, SHA: shaB,
			Name: "ci/build", Phase: commitstatusv1alpha1.CommitStatusSuccess},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	createDeployment(t, ns, "web", nil)
	rolledOut(t, ns, "web")
	createHC(t, ns, fmt.Sprintf(`
metadata: {name: web}
spec:
  targets: [{object: {apiVersion: apps/v1, kind: Deployment, name: web}}]
  commitStatus: {key: health, repositoryRef: {name: app}, revision: {fixed: %q}}`, shaA))

	hc := waitHC(t, ns, "web", func(hc *healthv1alpha1.HealthCheck) bool {
		c := conditions.Get(hc.Status.Conditions, healthv1alpha1.ConditionCommitStatusPublished)
		return c != nil && c.Reason == healthv1alpha1.ReasonNameConflict
	})
	assert.True(t, ready(hc), "health is still computed")
	cs, err := env.Sluice.CommitstatusV1alpha1().CommitStatuses(ns).Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, shaB, cs.Spec.SHA, "the other writer's CommitStatus is untouched")
}
