package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/testenv"
)

func ready(hc *healthv1alpha1.HealthCheck) bool {
	c := conditions.Get(hc.Status.Conditions, conditions.Ready)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == hc.Generation
}

func readyReason(hc *healthv1alpha1.HealthCheck) string {
	if c := conditions.Get(hc.Status.Conditions, conditions.Ready); c != nil {
		return c.Reason
	}
	return ""
}

// RFC-0009 story: cert-manager's Certificate goes through Issuing before Ready, and conditions
// carry the generation they were computed for. The built-in library holds the rule.
func TestRFCCertificateIssuingThenReady(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ns := newNamespace(t)
	startController(t, ns, nil, nil)
	create(t, certificates, ns, `
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web-tls}
spec: {secretName: web-tls, dnsNames: [web.example.com], issuerRef: {name: letsencrypt, kind: ClusterIssuer}}`)
	createHC(t, ns, `
metadata: {name: web}
spec:
  targets:
  - object: {apiVersion: cert-manager.io/v1, kind: Certificate, name: web-tls}`)

	hc := waitHC(t, ns, "web", hasResource("Certificate", "web-tls", healthv1alpha1.StatusInProgress))
	assert.False(t, hc.Status.Healthy, "a Certificate without status is not healthy")
	assert.Equal(t, healthv1alpha1.ReasonProgressing, readyReason(hc))
	assert.True(t, conditions.IsTrue(hc.Status.Conditions, conditions.Reconciling))

	setStatus(t, certificates, ns, "web-tls", `
conditions:
- {type: Ready, status: "False", reason: DoesNotExist, observedGeneration: 1}
- {type: Issuing, status: "True", reason: DoesNotExist, observedGeneration: 1, message: Issuing certificate as Secret does not exist}`)
	hc = waitHC(t, ns, "web", func(hc *healthv1alpha1.HealthCheck) bool {
		r, _ := resource(hc, "Certificate", "web-tls")
		return strings.Contains(r.Message, "inProgress expression is true")
	})
	r, _ := resource(hc, "Certificate", "web-tls")
	assert.Equal(t, healthv1alpha1.StatusInProgress, r.Status)

	setStatus(t, certificates, ns, "web-tls", `
conditions:
- {type: Ready, status: "True", reason: Ready, observedGeneration: 1, message: Certificate is up to date and has not expired}`)
	hc = waitHC(t, ns, "web", ready)
	assert.True(t, hc.Status.Healthy)
	assert.Equal(t, "1/1", hc.Status.Summary)
	assert.Equal(t, int32(1), hc.Status.Counts.Current)
	assert.NotNil(t, hc.Status.LastHealthyTime)

	// A spec change: the Ready condition still speaks of generation 1.
	gen := setSpec(t, certificates, ns, "web-tls", []any{"web.example.com", "www.example.com"}, "dnsNames")
	require.Equal(t, int64(2), gen)
	waitHC(t, ns, "web", hasResource("Certificate", "web-tls", healthv1alpha1.StatusInProgress))

	setStatus(t, certificates, ns, "web-tls", `
conditions:
- {type: Ready, status: "False", reason: Failed, observedGeneration: 2, message: "The certificate request has failed to complete and will be retried: rate limited"}
- {type: Issuing, status: "False", reason: Failed, observedGeneration: 2}`)
	hc = waitHC(t, ns, "web", hasResource("Certificate", "web-tls", healthv1alpha1.StatusFailed))
	assert.Equal(t, healthv1alpha1.ReasonFailed, readyReason(hc))
	assert.False(t, hc.Status.Healthy)
	assert.Contains(t, conditions.Get(hc.Status.Conditions, conditions.Ready).Message, "rate limited", "the Ready message explains the failure")
}

// RFC-0009 story with the RFC's own expressions in spec: SealedSecret reports Synced, and a
// status.observedGeneration behind metadata.generation means InProgress whatever the conditions.
func TestRFCSealedSecretSyncedAndObservedGeneration(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ns := newNamespace(t)
	startController(t, ns, nil, nil)
	create(t, sealedSecrets, ns, `
apiVersion: bitnami.com/v1alpha1
kind: SealedSecret
metadata: {name: db}
spec: {encryptedData: {password: AgBy3i4OJSWK}}
status: {observedGeneration: 1, conditions: [{type: Synced, status: "True"}]}`)
	createHC(t, ns, `
metadata: {name: db}
spec:
  targets:
  - object: {apiVersion: bitnami.com/v1alpha1, kind: SealedSecret, name: db}
  healthCheckExprs:
  - apiVersion: bitnami.com/v1alpha1
    kind: SealedSecret
    failed: "status.conditions.filter(e, e.type == 'Synced').all(e, e.status == 'False')"
    current: "status.conditions.filter(e, e.type == 'Synced').all(e, e.status == 'True')"`)
	waitHC(t, ns, "db", ready)

	setSpec(t, sealedSecrets, ns, "db", map[string]any{"password": "AgCHANGED"}, "encryptedData")
	hc := waitHC(t, ns, "db", hasResource("SealedSecret", "db", healthv1alpha1.StatusInProgress))
	r, _ := resource(hc, "SealedSecret", "db")
	assert.Contains(t, r.Message, "generation 2 not yet observed")

	setStatus(t, sealedSecrets, ns, "db", `{observedGeneration: 2, conditions: [{type: Synced, status: "False", message: "no key could decrypt secret (password)"}]}`)
	hc = waitHC(t, ns, "db", hasResource("SealedSecret", "db", healthv1alpha1.StatusFailed))
	r, _ = resource(hc, "SealedSecret", "db")
	assert.Contains(t, r.Message, "no key could decrypt secret")
}

// RFC-0009 story: a Cluster API Cluster is created without status. Flux once called it Current;
// here it is Unknown, with the evaluation error and a word on the missing status, until Ready
// appears: never Current before its controller reports.
func TestRFCClusterAPIClusterWithoutStatusIsUnknownUntilReady(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ns := newNamespace(t)
	startController(t, ns, nil, nil)
	create(t, clusters, ns, `
apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata: {name: prod}
spec: {clusterNetwork: {pods: {cidrBlocks: [192.168.0.0/16]}}}`)
	createHC(t, ns, `
metadata: {name: prod}
spec:
  targets:
  - object: {apiVersion: cluster.x-k8s.io/v1beta1, kind: Cluster, name: prod}
  healthCheckExprs:
  - apiVersion: cluster.x-k8s.io/v1beta1
    kind: Cluster
    failed: "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'False')"
    current: "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')"`)

	hc := waitHC(t, ns, "prod", hasResource("Cluster", "prod", healthv1alpha1.StatusUnknown))
	r, _ := resource(hc, "Cluster", "prod")
	assert.Contains(t, r.Message, "the object has no status")
	assert.Zero(t, hc.Status.Counts.Current)
	assert.Zero(t, hc.Status.Counts.Failed)

	setStatus(t, clusters, ns, "prod", `{phase: Provisioned, conditions: [{type: Ready, status: "True"}]}`)
	waitHC(t, ns, "prod", ready)
}

// An entry without kind covers the whole API group; an entry for a kind overrides it.
func TestGroupWideEntriesAndKindOverrides(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ns := newNamespace(t)
	startController(t, ns, nil, nil)
	create(t, widgets, ns, `{apiVersion: example.org/v1, kind: Widget, metadata: {name: running, labels: {app: shop}}, status: {phase: Running}}`)
	create(t, widgets, ns, `{apiVersion: example.org/v1, kind: Widget, metadata: {name: crashed, labels: {app: shop}}, status: {phase: Crashed}}`)
	create(t, gadgets, ns, `{apiVersion: example.org/v1, kind: Gadget, metadata: {name: g, labels: {app: shop}}, status: {phase: Running, ready: false}}`)
	createHC(t, ns, `
metadata: {name: shop}
spec:
  targets:
  - selector: {apiVersion: example.org/v1, kind: Widget, labelSelector: {matchLabels: {app: shop}}}
  - selector: {apiVersion: example.org/v1, kind: Gadget, labelSelector: {matchLabels: {app: shop}}}
  healthCheckExprs:
  - apiVersion: example.org/v1
    failed: "status.?phase.orValue('') == 'Crashed'"
    current: "status.?phase.orValue('') == 'Running'"
  - apiVersion: example.org/v1
    kind: Gadget
    current: "status.?ready.orValue(false) == true"`)

	hc := waitHC(t, ns, "shop", func(hc *healthv1alpha1.HealthCheck) bool { return hc.Status.Counts.Total == 3 })
	for name, want := range map[string]healthv1alpha1.ResourceStatus{"running": healthv1alpha1.StatusCurrent, "crashed": healthv1alpha1.StatusFailed} {
		r, ok := resource(hc, "Widget", name)
		require.True(t, ok)
		assert.Equal(t, want, r.Status, "Widget %s follows the group-wide entry", name)
	}
	g, _ := resource(hc, "Gadget", "g")
	assert.Equal(t, healthv1alpha1.StatusInProgress, g.Status, "the Gadget entry overrides the group-wide one, which would say Current")

	setStatus(t, gadgets, ns, "g", `{phase: Running, ready: true}`)
	waitHC(t, ns, "shop", hasResource("Gadget", "g", healthv1alpha1.StatusCurrent))
}

// Kinds without a check use kstatus. Pods do not run here, so the Deployment's status is written
// the way the deployment controller writes it.
func TestKstatusOnDeploymentsSelectedByLabel(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ns := newNamespace(t)
	startController(t, ns, nil, nil)
	createDeployment(t, ns, "web", map[string]string{"app": "web"})
	createDeployment(t, ns, "worker", nil)
	createHC(t, ns, `
metadata: {name: web}
spec:
  targets:
  - selector: {apiVersion: apps/v1, kind: Deployment, labelSelector: {matchLabels: {app: web}}}`)

	hc := waitHC(t, ns, "web", hasResource("Deployment", "web", healthv1alpha1.StatusInProgress))
	assert.Equal(t, int32(1), hc.Status.Counts.Total, "worker is not selected")

	rolledOut(t, ns, "web")
	waitHC(t, ns, "web", ready)

	// An object that starts matching the selector joins the set on its label event...
	labelDeployment(t, ns, "worker", map[string]string{"app": "web"})
	hc = waitHC(t, ns, "web", func(hc *healthv1alpha1.HealthCheck) bool { return hc.Status.Counts.Total == 2 })
	assert.False(t, hc.Status.Healthy, "worker has not rolled out")
	// ...and leaves it when it stops matching.
	labelDeployment(t, ns, "worker", nil)
	waitHC(t, ns, "web", func(hc *healthv1alpha1.HealthCheck) bool { return hc.Status.Counts.Total == 1 && ready(hc) })

	progressDeadlineExceeded(t, ns, "web")
	hc = waitHC(t, ns, "web", hasResource("Deployment", "web", healthv1alpha1.StatusFailed))
	assert.Equal(t, healthv1alpha1.ReasonFailed, readyReason(hc))
	r, _ := resource(hc, "Deployment", "web")
	assert.Contains(t, r.Message, "Progress deadline exceeded")
}

// An expression that fails at runtime makes its object Unknown with the error; it is not Failed
// and the controller keeps going. The CEL error counter records it.
func TestEvaluationErrorsMakeObjectsUnknown(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ns := newNamespace(t)
	run := startController(t, ns, nil, nil)
	create(t, widgets, ns, `{apiVersion: example.org/v1, kind: Widget, metadata: {name: w}, status: {replicas: three}}`)
	createHC(t, ns, `
metadata: {name: w}
spec:
  targets:
  - object: {apiVersion: example.org/v1, kind: Widget, name: w}
  healthCheckExprs:
  - {apiVersion: example.org/v1, kind: Widget, current: "status.replicas > 2"}`)

	hc := waitHC(t, ns, "w", hasResource("Widget", "w", healthv1alpha1.StatusUnknown))
	r, _ := resource(hc, "Widget", "w")
	assert.Contains(t, r.Message, "current expression of the check for example.org/v1 Widget")
	assert.Zero(t, hc.Status.Counts.Failed, "an evaluation error is not a failure")
	assert.Equal(t, healthv1alpha1.ReasonProgressing, readyReason(hc))
	assert.Regexp(t, `sluice_health_cel_errors_total\{phase="evaluation"\} [1-9]`, scrapeUntil(t, run.metrics, `sluice_health_cel_errors_total\{phase="evaluation"\} [1-9]`))

	setStatus(t, widgets, ns, "w", `{replicas: 3}`)
	waitHC(t, ns, "w", ready)
}

// An expression that does not compile stalls the HealthCheck with a message naming the
// expression and the CEL error; fixing the spec resumes it.
func TestInvalidExpressionStalls(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ns := newNamespace(t)
	run := startController(t, ns, nil, nil)
	create(t, widgets, ns, `{apiVersion: example.org/v1, kind: Widget, metadata: {name: w}, status: {ready: true}}`)
	createHC(t, ns, `
metadata: {name: w}
spec:
  targets:
  - object: {apiVersion: example.org/v1, kind: Widget, name: w}
  healthCheckExprs:
  - {apiVersion: example.org/v1, kind: Widget, current: "stauts.ready == true"}`)

	hc := waitHC(t, ns, "w", func(hc *healthv1alpha1.HealthCheck) bool {
		return conditions.IsTrue(hc.Status.Conditions, conditions.Stalled)
	})
	stalled := conditions.Get(hc.Status.Conditions, conditions.Stalled)
	assert.Equal(t, healthv1alpha1.ReasonInvalidCELExpression, stalled.Reason)
	assert.Contains(t, stalled.Message, `"stauts.ready == true"`, "names the expression")
	assert.Contains(t, stalled.Message, "undeclared reference to 'stauts'", "carries the CEL error")
	assert.Equal(t, hc.Generation, hc.Status.ObservedGeneration)
	assert.False(t, ready(hc))
	assert.Regexp(t, `sluice_health_check_state\{name="w",namespace="`+ns+`",state="Stalled"\} 1`, scrapeUntil(t, run.metrics, `sluice_health_check_state\{name="w",namespace="`+ns+`",state="Stalled"\} 1`))

	updateHC(t, ns, "w", func(hc *healthv1alpha1.HealthCheck) { hc.Spec.HealthCheckExprs[0].Current = "status.ready == true" })
	hc = waitHC(t, ns, "w", ready)
	assert.Nil(t, conditions.Get(hc.Status.Conditions, conditions.Stalled))
}

// The user library overrides the built-in library, and a HealthCheck's spec overrides both. A
// broken library stalls the HealthChecks instead of silently falling back.
func TestUserLibraryPrecedence(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ns := newNamespace(t)
	library := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "health-library", Namespace: ns}, Data: map[string]string{
		"cert-manager.yaml": `
- apiVersion: cert-manager.io/v1
  kind: Certificate
  current: "self.metadata.?annotations['example.org/approved'].orValue('') == 'yes'"`,
	}}
	_, err := env.Kube.CoreV1().ConfigMaps(ns).Create(context.Background(), library, metav1.CreateOptions{})
	require.NoError(t, err)
	startController(t, ns, nil, nil)
	create(t, certificates, ns, `
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: api-tls}
spec: {secretName: api-tls}
status: {conditions: [{type: Ready, status: "True"}]}`)
	target := `
  targets:
  - object: {apiVersion: cert-manager.io/v1, kind: Certificate, name: api-tls}`
	createHC(t, ns, "metadata: {name: by-library}\nspec:"+target)
	createHC(t, ns, "metadata: {name: by-spec}\nspec:"+target+`
  healthCheckExprs:
  - {apiVersion: cert-manager.io/v1, kind: Certificate, current: "status.conditions.exists(c, c.type == 'Ready')"}`)

	waitHC(t, ns, "by-library", hasResource("Certificate", "api-tls", healthv1alpha1.StatusInProgress)) // built-in would say Current
	waitHC(t, ns, "by-spec", ready)

	library.Data["cert-manager.yaml"] = `- {apiVersion: cert-manager.io/v1, kind: Certificate, current: "metadata.annotations["}`
	_, err = env.Kube.CoreV1().ConfigMaps(ns).Update(context.Background(), library, metav1.UpdateOptions{})
	require.NoError(t, err)
	hc := waitHC(t, ns, "by-library", func(hc *healthv1alpha1.HealthCheck) bool {
		return conditions.IsTrue(hc.Status.Conditions, conditions.Stalled)
	})
	stalled := conditions.Get(hc.Status.Conditions, conditions.Stalled)
	assert.Equal(t, healthv1alpha1.ReasonInvalidCELExpression, stalled.Reason)
	assert.Contains(t, stalled.Message, "user library ConfigMap "+ns+"/health-library")

	require.NoError(t, env.Kube.CoreV1().ConfigMaps(ns).Delete(context.Background(), "health-library", metav1.DeleteOptions{}))
	waitHC(t, ns, "by-library", ready) // back to the built-in rule
}

// Watches start when the first HealthCheck needs a kind and stop when none does.
func TestWatchesFollowTheHealthChecks(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ns := newNamespace(t)
	run := startController(t, ns, nil, nil)
	for _, n := range []string{"a", "b", "c"} {
		create(t, gadgets, ns, `{apiVersion: example.org/v1, kind: Gadget, metadata: {name: `+n+`}, status: {conditions: [{type: Ready, status: "True"}]}}`)
	}
	watching := func() bool {
		for _, s := range run.r.Watcher.Stats() {
			if s.Scope.Resource == gadgets && s.Scope.Namespace == ns {
				return true
			}
		}
		return false
	}
	assert.False(t, watching(), "nothing needs gadgets yet")

	spec := "\nspec:\n  targets:\n  - selector: {apiVersion: example.org/v1, kind: Gadget}"
	createHC(t, ns, "metadata: {name: one}"+spec)
	createHC(t, ns, "metadata: {name: two}"+spec)
	waitHC(t, ns, "one", ready)
	waitHC(t, ns, "two", ready)
	require.True(t, watching())
	assert.Contains(t, scrape(t, run.metrics), `sluice_health_watched_objects{group="example.org",resource="gadgets",version="v1"} 3`)

	ctx := context.Background()
	require.NoError(t, env.Sluice.HealthV1alpha1().HealthChecks(ns).Delete(ctx, "one", metav1.DeleteOptions{}))
	require.NoError(t, testenv.Wait(ctx, 10*time.Second, func(context.Context) (bool, error) {
		return !hasOwner(run, "one"), nil
	}))
	assert.True(t, watching(), "two still needs the watch")

	updateHC(t, ns, "two", func(hc *healthv1alpha1.HealthCheck) { hc.Spec.Suspend = true })
	hc := waitHC(t, ns, "two", func(hc *healthv1alpha1.HealthCheck) bool {
		return conditions.IsTrue(hc.Status.Conditions, conditions.Suspended)
	})
	assert.False(t, hc.Status.Healthy, "a suspended HealthCheck is not evaluated, so it does not show a stale healthy")
	assert.NotNil(t, hc.Status.LastHealthyTime, "it keeps when it was last healthy")
	require.NoError(t, testenv.Wait(ctx, 10*time.Second, func(context.Context) (bool, error) { return !watching(), nil }),
		"the last HealthCheck that needed gadgets is suspended: the watch stops")
}

func hasOwner(run *running, name string) bool {
	return len(run.r.Watcher.Owned(run.m.Options.Namespace+"/"+name)) > 0
}
