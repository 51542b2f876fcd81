package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func (c *Cluster) apiextensions() apiextensionsv1.CustomResourceDefinitionInterface {
	return apiextensionsv1.NewForConfigOrDie(c.Config).CustomResourceDefinitions()
}

// checkControllerPods checks the pods of a controller chart's release: Ready without a restart,
// from the expected image that was never pulled, under the chart's ServiceAccount, and, on the
// node itself, running as 65532 with no capabilities, no new privileges, seccomp and a
// read-only root filesystem.
func (c *Cluster) checkControllerPods(t *testing.T, ns, release, chart, image string) []corev1.Pod {
	t.Helper()
	pods, err := c.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/name=" + chart,
	})
	require.NoError(t, err)
	require.NotEmpty(t, pods.Items, "release %s has pods of %s", release, chart)
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		assert.True(t, podReady(&p), "pod %s is Ready", p.Name)
		require.Len(t, p.Spec.Containers, 1)
		spec := p.Spec.Containers[0]
		assert.Equal(t, image, spec.Image)
		assert.Equal(t, corev1.PullNever, spec.ImagePullPolicy)
		require.NotNil(t, spec.ReadinessProbe, "the chart sets a readiness probe")
		require.NotNil(t, spec.LivenessProbe, "the chart sets a liveness probe")
		require.Len(t, p.Status.ContainerStatuses, 1)
		status := p.Status.ContainerStatuses[0]
		assert.Zero(t, status.RestartCount, "pod %s never restarted\n%s", p.Name, lazy(func() string { return c.logs(context.Background(), ns, p.Name, spec.Name) }))
		c.checkProcess(t, p.Name, status.ContainerID)
	}
	return pods.Items
}

// checkProcess finds the container's process on the node by its cgroup and checks what the
// kernel enforces on it, whatever the pod spec says.
func (c *Cluster) checkProcess(t *testing.T, pod, containerID string) {
	t.Helper()
	id := strings.TrimPrefix(containerID, "containerd://")
	pid, err := processOf(id)
	require.NoError(t, err, "pod %s", pod)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	fields := map[string]string{}
	for _, line := range strings.Split(string(status), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	assert.Equal(t, "65532 65532 65532 65532", fields["Uid"], "pod %s runs as the image's user", pod)
	assert.Equal(t, "65532 65532 65532 65532", fields["Gid"], "pod %s", pod)
	for _, caps := range []string{"CapEff", "CapPrm", "CapBnd"} {
		assert.Equal(t, "0000000000000000", fields[caps], "pod %s: %s, every capability dropped", pod, caps)
	}
	assert.Equal(t, "1", fields["NoNewPrivs"], "pod %s cannot gain privileges", pod)
	assert.Equal(t, "2", fields["Seccomp"], "pod %s runs under a seccomp filter (RuntimeDefault)", pod)
	mounts, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	require.NoError(t, err)
	assert.True(t, rootReadOnly(string(mounts)), "pod %s: its root filesystem is read-only", pod)
}

// processOf finds the process whose cgroup is the container's.
func processOf(containerID string) (int, error) {
	if len(containerID) < 12 {
		return 0, fmt.Errorf("container id %q", containerID)
	}
	paths, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), containerID) {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(strings.TrimPrefix(p, "/proc/"), "%d/cgroup", &pid); err == nil {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no process in the cgroup of container %s", containerID)
}

// rootReadOnly reports whether the mount at / in a mountinfo has the ro option.
func rootReadOnly(mountinfo string) bool {
	for _, line := range strings.Split(mountinfo, "\n") {
		fields := strings.Fields(line)
		if len(fields) > 5 && fields[4] == "/" {
			for _, opt := range strings.Split(fields[5], ",") {
				if opt == "ro" {
					return true
				}
			}
			return false
		}
	}
	return false
}
