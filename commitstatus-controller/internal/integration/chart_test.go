package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/readiness"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/scmrepository"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/pkg/scm/scmtest"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/charts"
)

// The controller runs under the chart's ServiceAccount, by impersonation, with leader election:
// the chart's RBAC is enough, for CommitStatus, ScmProvider and ScmRepository status, and
// secretAccess.namespaces really limits which Secrets it can read.
func TestTheChartRBACIsEnoughAndLimitsSecretAccess(t *testing.T) {
	testenv.SkipIfShort(t)
	srv := scmtest.NewGitHub(t, githubToken)
	srv.AddRepo("acme", "app")
	allowed := githubSetup(t, srv, nil)
	denied := githubSetup(t, srv, nil)

	const release, releaseNS = "commitstatus-controller", "sluice-system"
	charts.InstallForTest(t, env, release, releaseNS, "commitstatus-controller", "secretAccess.namespaces={"+allowed+"}")

	startController(t, controllerOptions{
		config: env.Impersonate(releaseNS, release),
		mutate: func(o *options.Options) {
			o.LeaderElect = true
			o.LeaderElectionNamespace = releaseNS
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 15*time.Second, 10*time.Second, time.Second
		},
	})

	createCommitStatus(t, newCommitStatus(allowed, "health", "app", sha1, commitstatusv1alpha1.CommitStatusSuccess))
	waitFor(t, allowed, "health", synced(commitstatusv1alpha1.CommitStatusSuccess))
	assert.Len(t, srv.Statuses("acme", "app", sha1), 1)

	createCommitStatus(t, newCommitStatus(denied, "health", "app", sha1, commitstatusv1alpha1.CommitStatusSuccess))
	cs := waitFor(t, denied, "health", stalled(resolve.ReasonSecretForbidden))
	msg := conditions.Get(cs.Status.Conditions, conditions.Stalled).Message
	assert.Contains(t, msg, `the controller may not read Secret "github-token" in namespace "`+denied+`"`)
	assert.Contains(t, msg, "secretAccess")
	assert.Len(t, srv.Statuses("acme", "app", sha1), 1, "nothing was sent for the namespace it may not read")

	// The chart lets it write ScmProvider and ScmRepository status, and the same Secret limits apply.
	waitProvider(t, allowed, "github", readyIs(metav1.ConditionTrue, readiness.ReasonValid))
	waitRepository(t, allowed, "app", readyIs(metav1.ConditionTrue, readiness.ReasonValid))
	p := waitProvider(t, denied, "github", readyIs(metav1.ConditionFalse, resolve.ReasonSecretForbidden))
	assert.Contains(t, conditions.Get(p.Status.Conditions, conditions.Ready).Message, "secretAccess")
	waitRepository(t, denied, "app", readyIs(metav1.ConditionFalse, scmrepository.ReasonProviderNotReady))
}
