package scmrepository

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sluicehq/sluice/commitstatus-controller/internal/readiness"
	rt "github.com/sluicehq/sluice/commitstatus-controller/internal/readiness/readinesstest"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
)

const (
	ns       = rt.NS
	recheck  = rt.Recheck
	apiToken = rt.APIToken
	password = rt.Password
)

var (
	secret               = rt.Secret
	githubProvider       = rt.GitHubProvider
	readyProvider        = rt.ReadyProvider
	repository           = rt.Repository
	withAuth             = rt.WithAuth
	readyOf              = rt.ReadyOf
	mustSelector         = rt.MustSelector
	assertNoSecretValues = rt.AssertNoSecretValues
)

// ReasonValid, for the tests' table of verdicts.
const ReasonValid = readiness.ReasonValid

// fixture runs the reconciler over a fake cluster.
type fixture struct {
	*rt.Cluster
	t  *testing.T
	rr *Reconciler
}

func newFixture(t *testing.T, objects ...runtime.Object) *fixture {
	t.Helper()
	c := rt.NewCluster(t, objects...)
	return &fixture{Cluster: c, t: t, rr: &Reconciler{
		Options: c.Options(), Repositories: c.Repositories, Providers: c.Providers, Kube: c.Kube,
	}}
}

func (f *fixture) reconcileRepository(name string) (controller.Result, error) {
	f.t.Helper()
	res, err := f.rr.Reconcile(context.Background(), ns+"/"+name)
	f.Sync()
	return res, err
}
