package suite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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

// Every controller chart, and the UI's, installs alone on an empty cluster, with no other chart's CRDs (the
// promoter reports those it reads on the objects that need them, and is ready without them), and
// its pod becomes Ready from the imported image under the chart's security context, probes and
// RBAC. Uninstalling keeps its CRDs; they are then deleted, so the next chart starts from nothing.
func TestEveryChartAloneBecomesReady(t *testing.T) {
	ctx := context.Background()
	figures.add("baseline: one bare pod of the pause image, created to Ready", cluster.barePodReady(t))
	for _, name := range controllers {
		t.Run(name, func(t *testing.T) {
			ns := cluster.namespace(t, "e2e-"+name)
			set := cluster.imageValues("", cluster.Images.Version)
			took := cluster.helmWait(t, append([]string{"install", name, cluster.chart(name), "--namespace", ns}, setFlags(set)...)...)
			figures.add("helm install --wait, "+name+" alone", took)
			pods := cluster.checkControllerPods(t, ns, name, name, cluster.Images.Refs[name])
			if name == "promoter-controller" {
				cluster.saysOnceWhichCRDsAreMissing(t, ns, pods)
			}

			crds := cluster.chartCRDs(t, name)
			_, err := cluster.Helm.Run(ctx, "uninstall", name, "--namespace", ns, "--wait")
			require.NoError(t, err)
			cluster.requireCRDs(t, crds)
			cluster.deleteCRDs(t, crds)
		})
	}
	t.Run(uiChart, func(t *testing.T) {
		ns := cluster.namespace(t, "e2e-ui")
		// Anonymous reading is an opt-in; the suite reads the pages from the host, as nobody.
		set := append(cluster.imageValues("", cluster.Images.Version), "identity.anonymous=read")
		took := cluster.helmWait(t, append([]string{"install", uiImage, cluster.chart(uiChart), "--namespace", ns}, setFlags(set)...)...)
		// Uninstalled whatever the checks say, so that the umbrella chart's install later in the
		// suite does not meet this release's cluster-wide objects.
		t.Cleanup(func() {
			_, err := cluster.Helm.Run(ctx, "uninstall", uiImage, "--namespace", ns, "--wait")
			assert.NoError(t, err)
		})
		figures.add("helm install --wait, the UI alone", took)
		cluster.checkControllerPods(t, ns, uiImage, uiChart, cluster.Images.Refs[uiImage])
		// With no Sluice CRD at all, every page answers, saying quietly what is not installed.
		cluster.uiPage(t, ns, uiImage, "/pipelines", "PromotionStrategy is not installed on this cluster")
	})
}

// saysOnceWhichCRDsAreMissing reads the whole log of each pod of the promoter installed alone:
// one line names the missing CRDs and the charts that install them, and no watch failed.
func (c *Cluster) saysOnceWhichCRDsAreMissing(t *testing.T, ns string, pods []corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		var log string
		// Told once the CRDs are listed, which readiness waits for, on a goroutine of its own.
		testenv.WaitFor(t, 30*time.Second, func() (bool, error) {
			b, err := c.Kube.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: "controller"}).DoRaw(context.Background())
			log = string(b)
			return strings.Contains(log, "CRDs of other charts are not installed"), err
		}, "%s says which CRDs are missing", p.Name)
		// One line for Sluice's peer charts, and one for Flux's GitRepository, which merges wake
		// when it is installed: each said once.
		assert.Equal(t, 1, strings.Count(log, "install the commitstatus-controller, gate-controller and rollback-controller charts"),
			"%s says once which CRDs of Sluice's charts are missing:\n%s", p.Name, log)
		assert.LessOrEqual(t, strings.Count(log, "(Flux's source-controller) is not installed"), 1, "%s says at most once that Flux is missing:\n%s", p.Name, log)
		assert.LessOrEqual(t, strings.Count(log, "CRDs of other charts are not installed"), 2, "%s repeats itself:\n%s", p.Name, log)
		assert.NotContains(t, log, "Failed to watch", p.Name)
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
