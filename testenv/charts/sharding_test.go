package charts

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/sluicehq/sluice/testenv"
)

// Two releases of the gate-controller shard Gates by label in one namespace. Each one's
// ServiceAccount takes its own Lease, named after its release, at the same time as the other:
// both lead, neither can take the other's Lease.
func TestTwoShardedReleasesBothLead(t *testing.T) {
	testenv.SkipIfShort(t)
	ctx := context.Background()
	env := startEmpty(t)
	helm := newHelm(t, env)
	dir := chartDir(t, "gate-controller")
	shards := []struct{ release, selector string }{
		{"shard-a", "sluice.dev/shard=a"},
		{"shard-b", "sluice.dev/shard=b"},
	}
	leases := map[string]string{}
	for i, s := range shards {
		// The first release owns the CRD; a second owner would be a Helm ownership conflict.
		set := []string{"watchLabelSelector=" + s.selector, "crds.enabled=" + strconv.FormatBool(i == 0)}
		require.NoError(t, helm.Install(ctx, s.release, "sluice-system", dir, set...), s.release)
		out, err := helm.Template(ctx, s.release, "sluice-system", dir, nil, set...)
		require.NoError(t, err)
		objs, err := Objects(out)
		require.NoError(t, err)
		args, err := ContainerArgs(objs, s.release+"-gate-controller")
		require.NoError(t, err)
		selector, _ := Flag(args, "watch-label-selector")
		assert.Equal(t, s.selector, selector)
		lease, ok := Flag(args, "leader-election-id")
		require.True(t, ok, "the chart renders --leader-election-id")
		leases[s.release] = lease
	}
	require.NotEqual(t, leases["shard-a"], leases["shard-b"], "each release has its own Lease")

	// Both elect at once, each under its own ServiceAccount, as both Deployments would.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	leading := make(chan string, len(shards))
	for _, s := range shards {
		client, err := kubernetes.NewForConfig(env.Impersonate("sluice-system", s.release+"-gate-controller"))
		require.NoError(t, err)
		elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Name: leases[s.release],
			Lock: &resourcelock.LeaseLock{
				LeaseMeta:  metav1.ObjectMeta{Namespace: "sluice-system", Name: leases[s.release]},
				Client:     client.CoordinationV1(),
				LockConfig: resourcelock.ResourceLockConfig{Identity: s.release + "-pod"},
			},
			LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: time.Second,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) { leading <- s.release },
				OnStoppedLeading: func() {},
			},
		})
		require.NoError(t, err)
		go elector.Run(ctx)
	}
	got := map[string]bool{}
	for range shards {
		select {
		case release := <-leading:
			got[release] = true
		case <-ctx.Done():
			t.Fatalf("only %v took their Lease", got)
		}
	}
	for _, s := range shards {
		lease, err := env.Kube.CoordinationV1().Leases("sluice-system").Get(ctx, leases[s.release], metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, s.release+"-pod", *lease.Spec.HolderIdentity)
	}

	client, err := kubernetes.NewForConfig(env.Impersonate("sluice-system", "shard-a-gate-controller"))
	require.NoError(t, err)
	ok, err := Can(ctx, client, authorizationv1.ResourceAttributes{
		Namespace: "sluice-system", Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: leases["shard-b"]})
	require.NoError(t, err)
	assert.False(t, ok, "shard-a cannot take shard-b's Lease")
}
