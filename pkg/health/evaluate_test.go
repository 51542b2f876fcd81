package health_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/health/cel"
)

// The expressions of RFC-0009, verbatim.
var (
	rfcCertificate = health.Check{
		APIVersion: "cert-manager.io/v1",
		Kind:       "Certificate",
		InProgress: "status.conditions.filter(e, e.type == 'Issuing').all(e, e.observedGeneration == metadata.generation && e.status == 'True')",
		Failed:     "status.conditions.filter(e, e.type == 'Ready').all(e, e.observedGeneration == metadata.generation && e.status == 'False')",
		Current:    "status.conditions.filter(e, e.type == 'Ready').all(e, e.observedGeneration == metadata.generation && e.status == 'True')",
	}
	rfcSealedSecret = health.Check{
		APIVersion: "bitnami.com/v1alpha1",
		Kind:       "SealedSecret",
		Failed:     "status.conditions.filter(e, e.type == 'Synced').all(e, e.status == 'False')",
		Current:    "status.conditions.filter(e, e.type == 'Synced').all(e, e.status == 'True')",
	}
	rfcCluster = health.Check{
		APIVersion: "cluster.x-k8s.io/v1beta1",
		Kind:       "Cluster",
		Failed:     "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'False')",
		Current:    "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')",
	}
)

func certificate(generation int, conditions string) string {
	return fmt.Sprintf(`
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: app-certificate, namespace: apps, generation: %d}
spec: {secretName: app-tls-certs, issuerRef: {group: cert-manager.io, kind: ClusterIssuer, name: app-issuer}}
status:
  conditions: %s
`, generation, conditions)
}

func TestRFCCertificateIssuingThenReady(t *testing.T) {
	e := evaluator(t, []health.Check{rfcCertificate}, nil, nil)
	cases := []struct {
		name string
		obj  string
		want health.Status
	}{
		{"issuing at the current generation", certificate(2, `[
			{type: Ready, status: "False", observedGeneration: 2},
			{type: Issuing, status: "True", observedGeneration: 2}]`), health.InProgress},
		{"issued and ready", certificate(2, `[
			{type: Ready, status: "True", observedGeneration: 2},
			{type: Issuing, status: "False", observedGeneration: 2}]`), health.Current},
		{"issuance failed", certificate(2, `[
			{type: Ready, status: "False", observedGeneration: 2},
			{type: Issuing, status: "False", observedGeneration: 2}]`), health.Failed},
		{"conditions of an older generation: nothing true yet", certificate(3, `[
			{type: Ready, status: "True", observedGeneration: 2},
			{type: Issuing, status: "False", observedGeneration: 2}]`), health.InProgress},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := e.Evaluate(object(t, c.obj))
			assert.Equal(t, c.want, got.Status, got.Message)
		})
	}
}

func TestObservedGenerationBehindIsInProgressWithoutEvaluating(t *testing.T) {
	// Every expression would error on this status; none is evaluated.
	e := evaluator(t, []health.Check{rfcCertificate}, nil, nil)
	got := e.Evaluate(object(t, `
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: c, generation: 5}
status: {observedGeneration: 4}
`))
	assert.Equal(t, health.InProgress, got.Status)
	assert.Contains(t, got.Message, "generation 5 not yet observed")
}

func TestObservedGenerationEqualLetsExpressionsDecide(t *testing.T) {
	e := evaluator(t, []health.Check{rfcSealedSecret}, nil, nil)
	got := e.Evaluate(object(t, `
apiVersion: bitnami.com/v1alpha1
kind: SealedSecret
metadata: {name: s, generation: 3}
status:
  observedGeneration: 3
  conditions: [{type: Synced, status: "True"}]
`))
	assert.Equal(t, health.Current, got.Status, got.Message)
}

func TestStringObservedGeneration(t *testing.T) {
	check := health.Check{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Current: "status.phase == 'Healthy'"}
	e := evaluator(t, []health.Check{check}, nil, nil)
	rollout := func(observed string) string {
		return fmt.Sprintf("{apiVersion: argoproj.io/v1alpha1, kind: Rollout, metadata: {name: r, generation: 7}, status: {phase: Healthy, observedGeneration: %q}}", observed)
	}
	assert.Equal(t, health.Current, e.Evaluate(object(t, rollout("7"))).Status)
	assert.Equal(t, health.InProgress, e.Evaluate(object(t, rollout("6"))).Status)
	assert.Equal(t, health.Current, e.Evaluate(object(t, rollout("6c9f8b7d5"))).Status,
		"a hash cannot be compared with a generation and is ignored")
}

// The RFC's Certificate rule uses filter(...).all(...), which is true on an
// empty list. cert-manager removes the Issuing condition once the
// certificate is issued, so the verbatim rule keeps an issued certificate
// InProgress. The built-in library uses exists() and says Current.
func TestRFCIssuingRuleIsVacuouslyTrueWithoutIssuing(t *testing.T) {
	issued := object(t, certificate(2, `[{type: Ready, status: "True", observedGeneration: 2}]`))

	verbatim := evaluator(t, []health.Check{rfcCertificate}, nil, nil).Evaluate(issued)
	assert.Equal(t, health.InProgress, verbatim.Status)

	lib := evaluator(t, nil, nil, builtin(t)).Evaluate(issued)
	assert.Equal(t, health.Current, lib.Status, lib.Message)
}

func TestRFCSealedSecretSynced(t *testing.T) {
	e := evaluator(t, []health.Check{rfcSealedSecret}, nil, nil)
	sealed := func(status string) string {
		return `{apiVersion: bitnami.com/v1alpha1, kind: SealedSecret, metadata: {name: db, generation: 1}, status: ` + status + `}`
	}
	assert.Equal(t, health.Current, e.Evaluate(object(t, sealed(`{conditions: [{type: Synced, status: "True"}]}`))).Status)
	failed := e.Evaluate(object(t, sealed(`{conditions: [{type: Synced, status: "False", message: "no key could decrypt secret"}]}`)))
	assert.Equal(t, health.Failed, failed.Status)
	assert.Contains(t, failed.Message, "no key could decrypt secret", "the failing condition explains the result")
}

// A Cluster without status cannot be evaluated yet: it is Unknown, with the error and a word on
// why, so it is never called healthy before its controller reports, and the error is not hidden.
func TestRFCClusterAPIClusterWithoutStatusIsUnknownAndSaysWhy(t *testing.T) {
	e := evaluator(t, []health.Check{rfcCluster}, nil, nil)
	for name, doc := range map[string]string{
		"no status":    `{apiVersion: cluster.x-k8s.io/v1beta1, kind: Cluster, metadata: {name: prod, generation: 1}, spec: {}}`,
		"null status":  `{apiVersion: cluster.x-k8s.io/v1beta1, kind: Cluster, metadata: {name: prod, generation: 1}, status: null}`,
		"empty status": `{apiVersion: cluster.x-k8s.io/v1beta1, kind: Cluster, metadata: {name: prod, generation: 1}, status: {}}`,
	} {
		t.Run(name, func(t *testing.T) {
			got := e.Evaluate(object(t, doc))
			assert.Equal(t, health.Unknown, got.Status, got.Message)
			assert.Contains(t, got.Message, "conditions")
			assert.Contains(t, got.Message, "the object has no status")
		})
	}
	ready := e.Evaluate(object(t, `{apiVersion: cluster.x-k8s.io/v1beta1, kind: Cluster, metadata: {name: prod, generation: 1},
		status: {conditions: [{type: Ready, status: "True"}]}}`))
	assert.Equal(t, health.Current, ready.Status)
}

// Kinds without status, such as the ConfigMap of the README, report evaluation errors too.
func TestEvaluationErrorsOnAKindWithoutStatusAreUnknown(t *testing.T) {
	configMap := `{apiVersion: v1, kind: ConfigMap, metadata: {name: flags}, data: {mode: fast, items: "x"}}`
	for name, c := range map[string]struct{ expr, has string }{
		"a string result": {`self.data.mode`, "bool"},
		"a missing key":   {`self.data.missing == "x"`, "no such key"},
		"the cost limit":  {`[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, a+b+c+d > 0))))`, "cost"},
	} {
		t.Run(name, func(t *testing.T) {
			check := health.Check{APIVersion: "v1", Kind: "ConfigMap", Current: c.expr}
			compiler, err := cel.NewCompiler(cel.WithCostLimit(1000))
			require.NoError(t, err)
			r, err := health.Resolve([]health.Check{check}, nil, nil)
			require.NoError(t, err)
			got := health.NewEvaluator(compiler, r).Evaluate(object(t, configMap))
			assert.Equal(t, health.Unknown, got.Status, got.Message)
			assert.Contains(t, got.Message, c.has)
			assert.Contains(t, got.Message, "current expression of the check for v1 ConfigMap")
		})
	}
}

func TestSelfPresenceTest(t *testing.T) {
	check := health.Check{APIVersion: "example.org/v1", Kind: "Widget",
		InProgress: "!has(self.status)", Current: "has(self.status) && status.ready == true"}
	e := evaluator(t, []health.Check{check}, nil, nil)
	assert.Equal(t, health.InProgress, e.Evaluate(object(t, `{apiVersion: example.org/v1, kind: Widget, metadata: {name: w}}`)).Status)
	assert.Equal(t, health.Current, e.Evaluate(object(t, `{apiVersion: example.org/v1, kind: Widget, metadata: {name: w}, status: {ready: true}}`)).Status)
}

func TestEvaluationErrorIsUnknown(t *testing.T) {
	e := evaluator(t, []health.Check{rfcCluster}, nil, nil)
	// Status exists but has no conditions: the RFC expression cannot be
	// evaluated, which is neither healthy nor failed.
	got := e.Evaluate(object(t, `{apiVersion: cluster.x-k8s.io/v1beta1, kind: Cluster, metadata: {name: prod, generation: 1}, status: {phase: Provisioning}}`))
	assert.Equal(t, health.Unknown, got.Status)
	assert.Contains(t, got.Message, "failed expression")
	assert.Contains(t, got.Message, "cluster.x-k8s.io/v1beta1 Cluster")
	assert.Contains(t, got.Message, "conditions")
}

func TestRuntimeTypeErrorIsUnknown(t *testing.T) {
	check := health.Check{APIVersion: "example.org/v1", Kind: "Widget", Current: "status.replicas > 2"}
	got := evaluator(t, []health.Check{check}, nil, nil).Evaluate(object(t,
		`{apiVersion: example.org/v1, kind: Widget, metadata: {name: w}, status: {replicas: "three"}}`))
	assert.Equal(t, health.Unknown, got.Status, got.Message)
}

func TestNoExpressionTrueIsInProgress(t *testing.T) {
	check := health.Check{APIVersion: "example.org/v1", Kind: "Widget", Failed: "status.phase == 'Broken'", Current: "status.phase == 'Ready'"}
	got := evaluator(t, []health.Check{check}, nil, nil).Evaluate(object(t,
		`{apiVersion: example.org/v1, kind: Widget, metadata: {name: w}, status: {phase: Starting}}`))
	assert.Equal(t, health.InProgress, got.Status)
}

func TestOrderInProgressThenFailedThenCurrent(t *testing.T) {
	obj := object(t, `{apiVersion: example.org/v1, kind: Widget, metadata: {name: w}, status: {phase: x}}`)
	all := health.Check{APIVersion: "example.org/v1", Kind: "Widget", InProgress: "true", Failed: "true", Current: "true"}
	assert.Equal(t, health.InProgress, evaluator(t, []health.Check{all}, nil, nil).Evaluate(obj).Status)
	all.InProgress = "false"
	assert.Equal(t, health.Failed, evaluator(t, []health.Check{all}, nil, nil).Evaluate(obj).Status)
	all.Failed = ""
	assert.Equal(t, health.Current, evaluator(t, []health.Check{all}, nil, nil).Evaluate(obj).Status)
}

func TestInvalidExpressionIsATypedCompileError(t *testing.T) {
	check := health.Check{APIVersion: "example.org/v1", Kind: "Widget",
		Failed:  "status.conditions.exists(e, e.type == 'Ready'", // unbalanced
		Current: "stauts.ready == true",                          // typo
	}
	_, err := health.Compile(compiler(t), check)
	require.Error(t, err)

	var ce *cel.CompileError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, check.Failed, ce.Expression, "the first bad expression is reachable with errors.As")
	assert.Contains(t, err.Error(), "failed expression of the check for example.org/v1 Widget")
	assert.Contains(t, err.Error(), "current expression of the check for example.org/v1 Widget")
	assert.Contains(t, err.Error(), "undeclared reference to 'stauts'")

	require.Error(t, health.CompileAll(compiler(t), []health.Check{rfcCertificate, check}))
	require.NoError(t, health.CompileAll(compiler(t), []health.Check{rfcCertificate, rfcCluster}))

	// Evaluating with it anyway does not panic and does not claim health.
	got := evaluator(t, []health.Check{check}, nil, nil).Evaluate(object(t, `{apiVersion: example.org/v1, kind: Widget, metadata: {name: w}}`))
	assert.Equal(t, health.Unknown, got.Status)
	assert.Contains(t, got.Message, "spec")
}

func TestCostLimitStopsAnExpensiveExpression(t *testing.T) {
	check := health.Check{APIVersion: "example.org/v1", Kind: "Widget",
		Current: "spec.items.all(a, spec.items.all(b, spec.items.all(c, a + b + c >= 0)))"}
	items := make([]any, 100)
	for i := range items {
		items[i] = int64(i)
	}
	obj := object(t, `{apiVersion: example.org/v1, kind: Widget, metadata: {name: w}, status: {phase: x}}`)
	obj.Object["spec"] = map[string]any{"items": items}

	r, err := health.Resolve([]health.Check{check}, nil, nil)
	require.NoError(t, err)
	got := health.NewEvaluator(compiler(t, cel.WithCostLimit(50_000)), r).Evaluate(obj)
	assert.Equal(t, health.Unknown, got.Status)
	assert.Contains(t, got.Message, "cost limit exceeded")
}

func TestNilObjectIsNotFound(t *testing.T) {
	assert.Equal(t, health.NotFound, evaluator(t, nil, nil, nil).Evaluate(nil).Status)
}

func TestCheckValidate(t *testing.T) {
	cases := map[string]struct {
		check health.Check
		err   string
	}{
		"valid kind":       {health.Check{APIVersion: "example.org/v1", Kind: "Widget", Current: "true"}, ""},
		"valid group":      {health.Check{APIVersion: "example.org/v1beta2", Current: "true"}, ""},
		"valid core kind":  {health.Check{APIVersion: "v1", Kind: "ConfigMap", Current: "true"}, ""},
		"no apiVersion":    {health.Check{Kind: "Widget", Current: "true"}, "apiVersion is required"},
		"group only":       {health.Check{APIVersion: "example.org", Kind: "Widget", Current: "true"}, "<group>/<version>"},
		"too many slashes": {health.Check{APIVersion: "a/b/c", Kind: "Widget", Current: "true"}, "apiVersion"},
		"core group-wide":  {health.Check{APIVersion: "v1", Current: "true"}, "core group"},
		"no current":       {health.Check{APIVersion: "example.org/v1", Kind: "Widget", Failed: "true"}, "current expression is required"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := c.check.Validate()
			if c.err == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, c.err)
			_, err = health.Compile(compiler(t), c.check)
			assert.ErrorContains(t, err, c.err, "Compile validates too")
		})
	}
}
