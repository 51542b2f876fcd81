package charts

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
)

// Two releases of the gate-controller shard Gates by label in one namespace. Each one's
// controller, run with its release's rendered arguments under its ServiceAccount, takes its own
// Lease, named after its release, at the same time as the other: both lead and both reconcile,
// and neither may take the other's Lease.
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
	leases, args := map[string]string{}, map[string][]string{}
	for i, s := range shards {
		// The first release owns the CRD; a second owner would be a Helm ownership conflict.
		set := []string{"watchLabelSelector=" + s.selector, "crds.enabled=" + strconv.FormatBool(i == 0)}
		require.NoError(t, helm.Install(ctx, s.release, "sluice-system", dir, set...), s.release)
		out, err := helm.Template(ctx, s.release, "sluice-system", dir, nil, set...)
		require.NoError(t, err)
		objs, err := Objects(out)
		require.NoError(t, err)
		rendered, err := ContainerArgs(objs, s.release+"-gate-controller")
		require.NoError(t, err)
		selector, _ := Flag(rendered, "watch-label-selector")
		assert.Equal(t, s.selector, selector)
		lease, ok := Flag(rendered, "leader-election-id")
		require.True(t, ok, "the chart renders --leader-election-id")
		leases[s.release] = lease
		args[s.release] = rendered
	}
	require.NotEqual(t, leases["shard-a"], leases["shard-b"], "each release has its own Lease")

	// Both run at once, each with its chart's arguments under its own ServiceAccount, as both
	// Deployments would: each takes its own Lease and reconciles only the Gates of its shard.
	bin := buildController(t, "gate-controller")
	for _, s := range shards {
		runWithChartArgs(t, env, bin, s.release+"-gate-controller", args[s.release])
	}
	for _, s := range shards {
		testenv.WaitFor(t, time.Minute, func() (bool, error) {
			lease, err := env.Kube.CoordinationV1().Leases("sluice-system").Get(ctx, leases[s.release], metav1.GetOptions{})
			return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", nil
		}, s.release+" leads")
	}
	for _, shard := range []string{"a", "b"} {
		gate := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Name: "shard-" + shard, Namespace: "default",
			Labels: map[string]string{"sluice.dev/shard": shard}}}
		_, err := env.Sluice.GatingV1alpha1().Gates("default").Create(ctx, gate, metav1.CreateOptions{})
		require.NoError(t, err)
		testenv.WaitFor(t, time.Minute, func() (bool, error) {
			got, err := env.Sluice.GatingV1alpha1().Gates("default").Get(ctx, gate.Name, metav1.GetOptions{})
			return err == nil && got.Status.ObservedGeneration == got.Generation, err
		}, "shard "+shard+"'s gate reconciled")
	}

	client, err := kubernetes.NewForConfig(env.Impersonate("sluice-system", "shard-a-gate-controller"))
	require.NoError(t, err)
	ok, err := Can(ctx, client, authorizationv1.ResourceAttributes{
		Namespace: "sluice-system", Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: leases["shard-b"]})
	require.NoError(t, err)
	assert.False(t, ok, "shard-a cannot take shard-b's Lease")
}

// buildController builds a controller's binary from this checkout into the test's folder.
func buildController(t *testing.T, name string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "./"+name+"/cmd/"+name)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s: %s", name, out)
	return filepath.Join(dir, name)
}

// runWithChartArgs runs bin until the test ends with the arguments a chart rendered for its
// container, as serviceAccount in sluice-system; only the listen addresses change, to free
// loopback ports, since the pods' ports would clash on one host.
func runWithChartArgs(t *testing.T, env *testenv.Env, bin, serviceAccount string, rendered []string) {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, testenv.WriteKubeconfig(env.Impersonate("sluice-system", serviceAccount), kubeconfig))
	args := []string{"--kubeconfig", kubeconfig}
	for _, a := range rendered {
		if !strings.HasPrefix(a, "--metrics-bind-address") && !strings.HasPrefix(a, "--health-probe-bind-address") {
			args = append(args, a)
		}
	}
	args = append(args, "--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=127.0.0.1:0")
	var log bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.Env = append(os.Environ(), "POD_NAMESPACE=sluice-system")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s log:\n%s", serviceAccount, testenv.Tail(log.Bytes(), 60))
		}
	})
}
