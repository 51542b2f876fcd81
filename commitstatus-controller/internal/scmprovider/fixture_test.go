package scmprovider

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	rt "github.com/sluicehq/sluice/commitstatus-controller/internal/readiness/readinesstest"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
)

// fixture runs the reconciler over a fake cluster.
type fixture struct {
	*rt.Cluster
	t  *testing.T
	pr *Reconciler
}

func newFixture(t *testing.T, objects ...runtime.Object) *fixture {
	t.Helper()
	c := rt.NewCluster(t, objects...)
	return &fixture{Cluster: c, t: t, pr: &Reconciler{Options: c.Options(), Providers: c.Providers, Checker: c.Resolver}}
}

func (f *fixture) reconcileProvider(name string) (controller.Result, error) {
	f.t.Helper()
	res, err := f.pr.Reconcile(context.Background(), rt.NS+"/"+name)
	f.Sync()
	return res, err
}
