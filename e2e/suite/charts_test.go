package suite

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/sluicehq/sluice/testenv"
)

// peerCRDs are the charts whose CRDs a controller cannot become ready without (charts/sluice's
// README, "Which charts a feature needs"): they are installed first, with no replica, as that
// README says.
var peerCRDs = map[string][]string{"promoter-controller": {"commitstatus-controller", "gate-controller"}}

// Every controller chart installs alone on an empty cluster (with only the CRDs it cannot do
// without), and its pod becomes Ready from the imported image under the chart's security
// context, probes and RBAC. Uninstalling keeps its CRDs; they are then deleted, so the next
// chart starts from nothing.
func TestEveryChartAloneBecomesReady(t *testing.T) {
	ctx := context.Background()
	figures.add("baseline: one bare pod of the pause image, created to Ready", cluster.barePodReady(t))
	for _, name := range controllers {
		t.Run(name, func(t *testing.T) {
			ns := cluster.namespace(t, "e2e-"+name)
			releases := []string{name}
			for _, peer := range peerCRDs[name] {
				cluster.helmWait(t, "install", peer, cluster.chart(peer), "--namespace", ns, "--set", "replicaCount=0")
				releases = append(releases, peer)
			}
			set := cluster.imageValues("", cluster.Images.Version)
			took := cluster.helmWait(t, append([]string{"install", name, cluster.chart(name), "--namespace", ns}, setFlags(set)...)...)
			what := "helm install --wait, " + name + " alone"
			if len(releases) > 1 {
				what += " (its peers' CRDs installed first)"
			}
			figures.add(what, took)
			cluster.checkControllerPods(t, ns, name, name, cluster.Images.Refs[name])

			var crds []string
			for _, r := range releases {
				crds = append(crds, cluster.chartCRDs(t, r)...)
				_, err := cluster.Helm.Run(ctx, "uninstall", r, "--namespace", ns, "--wait")
				require.NoError(t, err)
			}
			cluster.requireCRDs(t, crds)
			cluster.deleteCRDs(t, crds)
		})
	}
}

// barePodReady creates one pod of the pause image, with no probe, and returns how long it took
// to become Ready: the floor under any chart's install to Ready on this node.
func (c *Cluster) barePodReady(t *testing.T) time.Duration {
	t.Helper()
	ctx := context.Background()
	ns := c.namespace(t, "e2e-bare-pod")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pause"},
		Spec: corev1.PodSpec{
			SecurityContext: restrictedPod(),
			Containers: []corev1.Container{{Name: "pause", Image: c.Images.Refs["pause"], ImagePullPolicy: corev1.PullNever,
				SecurityContext: restrictedContainer()}},
		},
	}
	start := time.Now()
	_, err := c.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	testenv.WaitFor(t, 2*time.Minute, func() (bool, error) {
		p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, "pause", metav1.GetOptions{})
		return err == nil && podReady(p), err
	}, "a bare pod becomes Ready")
	return time.Since(start)
}

func setFlags(set []string) []string {
	var args []string
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return args
}

// chartCRDs are the names of the CRDs a chart owns (its files/crds).
func (c *Cluster) chartCRDs(t *testing.T, chart string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(c.chart(chart), "files", "crds", "*.yaml"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var crd struct {
			Metadata struct{ Name string } `json:"metadata"`
		}
		require.NoError(t, yaml.Unmarshal(b, &crd))
		names = append(names, crd.Metadata.Name)
	}
	require.NotEmpty(t, names, "chart %s owns CRDs", chart)
	return names
}

// requireCRDs fails unless every CRD exists and is not being deleted.
func (c *Cluster) requireCRDs(t *testing.T, names []string) {
	t.Helper()
	for _, name := range names {
		crd, err := c.apiextensions().Get(context.Background(), name, metav1.GetOptions{})
		if assert.NoError(t, err, "CRD %s is kept after helm uninstall", name) {
			assert.Nil(t, crd.DeletionTimestamp, "CRD %s is not being deleted", name)
		}
	}
}

func (c *Cluster) deleteCRDs(t *testing.T, names []string) {
	t.Helper()
	ctx := context.Background()
	for _, name := range names {
		require.NoError(t, c.apiextensions().Delete(ctx, name, metav1.DeleteOptions{}))
	}
	for _, name := range names {
		testenv.WaitFor(t, 2*time.Minute, func() (bool, error) {
			_, err := c.apiextensions().Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}, "CRD %s is deleted", name)
	}
}
