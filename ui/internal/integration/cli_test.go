package integration

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/ui/internal/plugin"
)

// kubectlSluice runs `kubectl sluice ARGS -n NS` in-process against the control plane, with its
// admin kubeconfig, and returns the exit code, stdout and stderr.
func kubectlSluice(t *testing.T, ns string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append(args, "--kubeconfig", env.Kubeconfig, "-n", ns)
	code := plugin.Main(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestKubectlSluiceGateClosesApprovesAndOpensAsTheGateController(t *testing.T) {
	gateController(t)
	ns := newNamespace(t)
	createGate(t, ns, "prod")
	gates := env.Sluice.GatingV1alpha1().Gates(ns)

	code, out, errOut := kubectlSluice(t, ns, "gate", "close", "prod", "-m", "release 1.4 sign-off", "--wait", "60s")
	require.Equal(t, 0, code, out+errOut)
	assert.Equal(t, "gate/prod closed (Manual): release 1.4 sign-off\n", out, "confirmed by the gate-controller")
	g, err := gates.Get(context.Background(), "prod", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, g.Spec.Closed)
	assert.True(t, managedBy(g.ManagedFields, "kubectl-sluice"), "the plugin names itself in managedFields")

	code, out, errOut = kubectlSluice(t, ns, "gate", "approve", "prod", "--revision", "6.0.1", "-m", "CVE fix", "--wait", "60s")
	require.Equal(t, 0, code, out+errOut)
	assert.Contains(t, out, "gate/prod approves 6.0.1")
	g, err = gates.Get(context.Background(), "prod", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, g.Spec.Approvals, 1)
	assert.Equal(t, "CVE fix", g.Spec.Approvals[0].Message)
	assert.NotEmpty(t, g.Spec.Approvals[0].By, "who approves, as the API server knows them")

	code, out, errOut = kubectlSluice(t, ns, "gate", "list")
	require.Equal(t, 0, code, out+errOut)
	assert.Regexp(t, `(?m)^prod\s+closed\s+Manual`, out)

	code, out, errOut = kubectlSluice(t, ns, "gate", "open", "prod", "--wait", "60s")
	require.Equal(t, 0, code, out+errOut)
	assert.Contains(t, out, "gate/prod open")
	g, err = gates.Get(context.Background(), "prod", metav1.GetOptions{})
	require.NoError(t, err)
	assert.False(t, g.Spec.Closed)

	code, _, errOut = kubectlSluice(t, ns, "gate", "close", "nope", "--wait", "0")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "gate "+ns+"/nope not found; list gates with `kubectl sluice gate list -n "+ns+"`")
	code, _, _ = kubectlSluice(t, ns, "gate", "close")
	assert.Equal(t, 2, code, "no gate named: a usage error")
}

func TestKubectlSluiceGateSuspendsAndResumesWithAReason(t *testing.T) {
	ns := newNamespace(t)
	createGate(t, ns, "freeze")
	gates := env.Sluice.GatingV1alpha1().Gates(ns)

	code, out, errOut := kubectlSluice(t, ns, "gate", "suspend", "gate/freeze", "-m", "auditors at work")
	require.Equal(t, 0, code, out+errOut)
	assert.Contains(t, out, "suspended (the annotation): auditors at work")
	g, err := gates.Get(context.Background(), "freeze", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "auditors at work", g.Annotations[suspend.Annotation])

	code, out, errOut = kubectlSluice(t, ns, "gate", "resume", "gate/freeze")
	require.Equal(t, 0, code, out+errOut)
	assert.Contains(t, out, "resumed (removed the "+suspend.Annotation+" annotation)")
	g, err = gates.Get(context.Background(), "freeze", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, g.Annotations, suspend.Annotation)
}

// createStrategy creates PromotionStrategy checkout with one environment, env/dev, and writes
// the status its controller would report, with envs.
func createStrategy(t *testing.T, ns string, envs ...promoterv1alpha1.EnvironmentStatus) {
	t.Helper()
	ctx := context.Background()
	ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(ns).Create(ctx, &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "checkout"},
		Spec: promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "repo"}, DryBranch: "main",
			Environments: []promoterv1alpha1.Environment{{Branch: "env/dev"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	ps.Status.Environments = envs
	_, err = env.Sluice.PromoterV1alpha1().PromotionStrategies(ns).UpdateStatus(ctx, ps, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// createScmRepository creates ScmRepository repo, the repository at url on plain git, which the
// strategies the tests create name.
func createScmRepository(t *testing.T, ns, url string) {
	t.Helper()
	ctx := context.Background()
	_, err := env.Sluice.ScmV1alpha1().ScmProviders(ns).Create(ctx, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "git"}, Spec: scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGit}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Sluice.ScmV1alpha1().ScmRepositories(ns).Create(ctx, &scmv1alpha1.ScmRepository{ObjectMeta: metav1.ObjectMeta{Name: "repo"},
		Spec: scmv1alpha1.ScmRepositorySpec{URL: url, AllowInsecureLoopbackHTTP: true, Owner: "acme", Name: "deploy",
			ProviderRef: scmv1alpha1.LocalObjectReference{Name: "git"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// strategyWithStatus creates PromotionStrategy checkout whose env/dev runs newSHA, ran oldSHA
// healthy an hour ago, and is offered a third commit that a gate holds.
func strategyWithStatus(t *testing.T, ns string) {
	t.Helper()
	createStrategy(t, ns, promoterv1alpha1.EnvironmentStatus{Branch: "env/dev",
		Active:             promoterv1alpha1.CommitState{DrySHA: newSHA, Phase: "success"},
		Proposed:           promoterv1alpha1.CommitState{DrySHA: strings.Repeat("3", 40)},
		Blocks:             []promoterv1alpha1.PromotionBlock{{Rule: promoterv1alpha1.BlockGates, Environment: "env/dev", Message: "gate freeze is closed: audit"}},
		LastHealthyDrySHAs: []promoterv1alpha1.HealthyDrySHA{{SHA: newSHA, Time: metav1.Now()}, {SHA: oldSHA, Time: metav1.NewTime(time.Now().Add(-time.Hour))}},
	})
}

func TestKubectlSluiceRevertCreatesTheRevertCommitTheUIWould(t *testing.T) {
	ns := newNamespace(t)
	strategyWithStatus(t, ns)

	code, out, errOut := kubectlSluice(t, ns, "revert", "checkout/env/dev", "--to", oldSHA[:7], "-m", "checkout errors")
	require.Equal(t, 0, code, out+errOut)
	assert.Contains(t, out, "environment env/dev of checkout goes back to dry commit "+oldSHA)
	reverts, err := env.Sluice.RollbackV1alpha1().RevertCommits(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, reverts.Items, 1)
	rc := reverts.Items[0]
	assert.True(t, strings.HasPrefix(rc.Name, "checkout-env-dev-"), rc.Name)
	assert.Equal(t, rollbackv1alpha1.RevertCommitSpec{
		PromotionStrategyRef: rollbackv1alpha1.PromotionStrategyReference{Name: "checkout"},
		ActiveBranch:         "env/dev", DrySHA: oldSHA, Reason: "checkout errors",
	}, rc.Spec)

	for _, bad := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"revert", "checkout/env/dev", "--to", newSHA}, 1, "choose one of: " + oldSHA},
		{[]string{"revert", "checkout/env/qa", "--to", oldSHA}, 1, `no environment "env/qa"; its environments: env/dev`},
		{[]string{"revert", "nope/env/dev", "--to", oldSHA}, 1, "PromotionStrategy " + ns + "/nope"},
		{[]string{"revert", "checkout", "--to", oldSHA}, 2, "STRATEGY/BRANCH"},
		{[]string{"revert", "checkout/env/dev"}, 2, "--to is required"},
	} {
		code, out, errOut := kubectlSluice(t, ns, bad.args...)
		assert.Equal(t, bad.code, code, "%v: %s%s", bad.args, out, errOut)
		assert.Contains(t, errOut, bad.says, bad.args)
	}
	reverts, err = env.Sluice.RollbackV1alpha1().RevertCommits(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, reverts.Items, 1, "bad input creates nothing")
}

func TestKubectlSluicePromoteStatusSaysWhatWaitsAndWhy(t *testing.T) {
	ns := newNamespace(t)
	strategyWithStatus(t, ns)
	code, out, errOut := kubectlSluice(t, ns, "promote", "status", "checkout")
	require.Equal(t, 0, code, out+errOut)
	assert.Regexp(t, `(?m)^env/dev\s+2222222\s+3333333\s+blocked\s+Gates \(env/dev\): gate freeze is closed: audit$`, out)
	assert.Contains(t, out, "env/dev can be reverted to: 1111111")

	code, _, errOut = kubectlSluice(t, ns, "promote", "status", "nope")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "PromotionStrategy "+ns+"/nope")
}

func TestKubectlSluiceReleaseHistoryAndRollback(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	releases := env.Sluice.RollbackV1alpha1().ManifestReleases(ns)
	mr, err := releases.Create(ctx, &rollbackv1alpha1.ManifestRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "payments"},
		Spec: rollbackv1alpha1.ManifestReleaseSpec{Source: rollbackv1alpha1.ManifestSource{
			ConfigMaps: []rollbackv1alpha1.ConfigMapReference{{Name: "payments-manifests"}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	applied := metav1.NewTime(time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC))
	mr.Status.UpgradeNumber, mr.Status.DeployedVersion = 3, "v3"
	mr.Status.History = []rollbackv1alpha1.ReleaseHistoryEntry{
		{Number: 3, Action: rollbackv1alpha1.ActionUpgrade, Version: "v3", Digest: "sha256:" + strings.Repeat("3", 64), Time: applied, Test: rollbackv1alpha1.TestPassed},
		{Number: 2, Action: rollbackv1alpha1.ActionUpgrade, Version: "v2", Digest: "sha256:" + strings.Repeat("2", 64), Time: applied, Test: rollbackv1alpha1.TestFailed, RolledBack: true, Message: "smoke test failed"},
		{Number: 1, Action: rollbackv1alpha1.ActionUpgrade, Version: "v1", Digest: "sha256:" + strings.Repeat("1", 64), Time: applied, Test: rollbackv1alpha1.TestPassed},
	}
	_, err = releases.UpdateStatus(ctx, mr, metav1.UpdateOptions{})
	require.NoError(t, err)

	code, out, errOut := kubectlSluice(t, ns, "release", "history", "payments")
	require.Equal(t, 0, code, out+errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	assert.Equal(t, []string{"SNAPSHOT", "VERSION", "ACTION", "APPLIED", "TEST", "OUTCOME", "MESSAGE"}, strings.Fields(lines[0]))
	assert.Equal(t, []string{"3", "v3", "Upgrade", "2026-11-28T09:30:00Z", "Passed", "deployed"}, strings.Fields(lines[1]))
	assert.Equal(t, []string{"2", "v2", "Upgrade", "2026-11-28T09:30:00Z", "Failed", "rolled", "back", "smoke", "test", "failed"}, strings.Fields(lines[2]))

	code, _, errOut = kubectlSluice(t, ns, "release", "rollback", "payments", "--to", "3")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "snapshot 3 is what ManifestRelease "+ns+"/payments runs now")
	code, _, errOut = kubectlSluice(t, ns, "release", "rollback", "payments")
	assert.Equal(t, 2, code, errOut)

	code, out, errOut = kubectlSluice(t, ns, "release", "rollback", "payments", "--to", "1")
	require.Equal(t, 0, code, out+errOut)
	assert.Contains(t, out, "manifestrelease/payments rolls back to snapshot 1")
	mr, err = releases.Get(ctx, "payments", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1", mr.Annotations[rollbackv1alpha1.RollbackToAnnotation])
}

func managedBy(fields []metav1.ManagedFieldsEntry, manager string) bool {
	for _, f := range fields {
		if f.Manager == manager {
			return true
		}
	}
	return false
}
