package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/fluxwake"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// requestedBy reports whether manager set the requestedAt annotation of u last.
func requestedBy(u *unstructured.Unstructured, manager string) bool {
	for _, mf := range u.GetManagedFields() {
		if mf.Manager == manager && mf.FieldsV1 != nil && strings.Contains(string(mf.FieldsV1.Raw), fluxwake.RequestedAtAnnotation) {
			return true
		}
	}
	return false
}

// A revert merged into prod asks the Flux source that tracks prod to fetch at once: the
// rollback-controller sets its requestedAt (the promoter, which merged the revert's pull request,
// leaves reverts to it), after the merge.
func TestARevertMergedAsksTheFluxSourceOfItsBranchToFetch(t *testing.T) {
	f := newFixture(t)
	paths, err := flux.CRDPaths()
	require.NoError(t, err)
	require.NoError(t, env.InstallCRDPaths(paths...))
	src := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"url": f.srv.URL("app"), "interval": "1h", "ref": map[string]any{"branch": "prod"}}}}
	src.SetAPIVersion("source.toolkit.fluxcd.io/v1")
	src.SetKind("GitRepository")
	src.SetName("prod")
	sources := env.Dynamic.Resource(fluxwake.GitRepositories).Namespace(f.ns)
	_, err = sources.Create(f.ctx, src, metav1.CreateOptions{})
	require.NoError(t, err)

	healthyThenBad(f)
	startRollback(t, env.Config, f.ns, time.Second)
	f.revert("bad-web-2", "prod", nil)
	rc := f.waitRevert("bad-web-2", "merged", inPhase(rollbackv1alpha1.RevertMerged))

	var got *unstructured.Unstructured
	require.NoError(t, testenv.Wait(f.ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		got, err = sources.Get(ctx, "prod", metav1.GetOptions{})
		return err == nil && requestedBy(got, "rollback-controller"), nil
	}), "the rollback-controller set requestedAt on GitRepository prod")
	at, err := time.Parse(time.RFC3339Nano, got.GetAnnotations()[fluxwake.RequestedAtAnnotation])
	require.NoError(t, err)
	require.NotNil(t, rc.Status.MergeTime)
	assert.False(t, at.Before(rc.Status.MergeTime.Add(-time.Second)), "asked at %s, after the revert merged at %s", at, rc.Status.MergeTime)
}
