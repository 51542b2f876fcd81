package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"

	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/rollback-controller/internal/revertcommit"
	"github.com/sluicehq/sluice/rollback-controller/internal/rollbackpolicy"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/charts"
)

// The controller runs as the chart's ServiceAccount, by impersonation, through an automatic
// rollback on a repository that needs credentials: the chart's RBAC is enough, and no more than
// that is granted.
func TestRollbackUnderTheChartsServiceAccount(t *testing.T) {
	testenv.SkipIfShort(t)
	ctx := context.Background()
	f := newFixture(t)
	// The chart reads Secrets in no namespace by default: the credentials' namespace is listed.
	sa := charts.ServiceAccountForTest(t, env, "rollback-controller", f.ns, []authorizationv1.ResourceAttributes{
		{Verb: "list", Resource: "secrets"}, {Verb: "watch", Resource: "secrets"},
		{Verb: "get", Resource: "secrets", Namespace: "kube-system"},
		{Verb: "update", Group: "promoter.sluice.dev", Resource: "promotionstrategies"},
		{Verb: "update", Group: "promoter.sluice.dev", Resource: "pullrequests", Subresource: "status"},
		{Verb: "create", Group: "commitstatus.sluice.dev", Resource: "commitstatuses"},
		{Verb: "update", Group: "rollback.sluice.dev", Resource: "rollbackpolicies"},
	}...)
	authed := gittest.NewServer(t, gittest.WithBasicAuth("sluice", "s3cret"))
	f.srv, f.repo = authed, authed.CreateRepo(t, "app")
	env.UseBasicAuth(t, f.ns, "app", authed.URL("app"), "sluice", "s3cret")

	f.bootstrap("prod")
	f.strategy("prod")
	startPromoter(t, f.ns)
	startRollback(t, sa, f.ns, time.Second)
	f.policy(0, time.Hour, time.Hour)
	d1 := f.dryCommit("web 1")
	f.promote("prod", d1, "web:1", success)
	d2 := f.dryCommit("web 2")
	f.promote("prod", d2, "web:2", failure)

	name := rollbackpolicy.RevertCommitName("prod", "prod", d2)
	rc := f.waitRevert(name, "merged under the chart's RBAC", inPhase(rollbackv1alpha1.RevertMerged))
	assert.Equal(t, d1, rc.Status.TargetDrySHA)
	f.waitPolicyThat("records the rollback", recordsRollback(name, d2))
	require.NoError(t, testenv.Wait(ctx, 20*time.Second, func(context.Context) (bool, error) {
		return len(f.events(revertcommit.EventRollbackMerged)) == 1 && len(f.events(rollbackpolicy.EventRevertCommitCreated)) == 1, nil
	}), "events recorded under the chart's RBAC")
}
