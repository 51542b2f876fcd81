package plugin

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sluicehq/sluice/testenv"
)

func readyAs(phase corev1.PodPhase, ready corev1.ConditionStatus) corev1.PodStatus {
	return corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}
}

func TestReadyPodPicksARunningReadyPodByName(t *testing.T) {
	gone := metav1.Now()
	for _, c := range []struct {
		name string
		pods []corev1.Pod
		want string
	}{
		{"none", nil, ""},
		{"pending or not ready", []corev1.Pod{
			{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: readyAs(corev1.PodPending, corev1.ConditionFalse)},
			{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Status: readyAs(corev1.PodRunning, corev1.ConditionFalse)},
		}, ""},
		{"being deleted", []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "a", DeletionTimestamp: &gone}, Status: readyAs(corev1.PodRunning, corev1.ConditionTrue)}}, ""},
		{"the first ready by name", []corev1.Pod{
			{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Status: readyAs(corev1.PodRunning, corev1.ConditionTrue)},
			{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: readyAs(corev1.PodRunning, corev1.ConditionFalse)},
			{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Status: readyAs(corev1.PodRunning, corev1.ConditionTrue)},
		}, "b"},
	} {
		p, err := readyPod(c.pods)
		if c.want == "" {
			assert.ErrorContains(t, err, fmt.Sprintf("no ready pod among its %d", len(c.pods)), c.name)
			continue
		}
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, p.Name, c.name)
	}
}

func TestPodPortFollowsTheServicesTargetPort(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ui-0"}, Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "ui", Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 8090}, {Name: "http", ContainerPort: 8092}}}}}}
	svc := func(ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{Spec: corev1.ServiceSpec{Ports: ports}}
	}
	for _, c := range []struct {
		name    string
		svc     *corev1.Service
		want    int32
		wantErr string
	}{
		{"a named target port", svc(corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}), 8092, ""},
		{"a numbered target port", svc(corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromInt32(9000)}), 9000, ""},
		{"no target port is the port", svc(corev1.ServicePort{Name: "web", Port: 8092}), 8092, ""},
		{"the http one of several", svc(corev1.ServicePort{Name: "metrics", Port: 8090}, corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}), 8092, ""},
		{"several, none http", svc(corev1.ServicePort{Name: "a", Port: 1}, corev1.ServicePort{Name: "b", Port: 2}), 0, "no port named http among its 2 ports"},
		{"a name the pod lacks", svc(corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromString("web")}), 0, `pod ui-0 has no container port named "web"`},
	} {
		got, err := podPort(c.svc, pod)
		if c.wantErr != "" {
			assert.ErrorContains(t, err, c.wantErr, c.name)
			continue
		}
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, got, c.name)
	}
}

// uiInstall is what charts/ui puts in a namespace, as far as a port-forward looks: its pages'
// Service and its metrics Service, both labelled as the chart's, and its pods, one ready (as a
// kubelet would report it) and one not.
func uiInstall(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	_, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	selector := map[string]string{"app.kubernetes.io/name": "ui", "app.kubernetes.io/instance": "sluice"}
	_, err = env.Kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "sluice-ui", Labels: selector},
		Spec: corev1.ServiceSpec{Selector: selector, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "sluice-ui-metrics", Labels: selector},
		Spec: corev1.ServiceSpec{Selector: selector, Ports: []corev1.ServicePort{
			{Name: "metrics", Port: 8090, TargetPort: intstr.FromString("metrics")}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, name := range []string{"sluice-ui-a", "sluice-ui-b"} {
		pod, err := env.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: selector},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ui", Image: "sluice-ui",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8092}}}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		pod.Status = readyAs(corev1.PodRunning, corev1.ConditionFalse)
		if name == "sluice-ui-b" {
			pod.Status = readyAs(corev1.PodRunning, corev1.ConditionTrue)
		}
		_, err = env.Kube.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
}

// On the real control plane, --port-forward finds charts/ui's Service by its label or its name,
// the ready pod behind it and the pod's port; it says what to do when there is none or several.
// The control plane has no kubelet, so the forward itself is refused by the API server: the
// plugin fails with that, naming the pod. (A forward to a real pod is what kubectl port-forward
// does with the same client-go code; make e2e runs the UI on a real node.)
func TestPortForwardFindsTheUIServiceAndItsReadyPod(t *testing.T) {
	testenv.SkipIfShort(t)
	ctx := context.Background()
	uiInstall(t, "pf-sluice")

	got, err := findUI(ctx, env.Kube, "pf-sluice", "")
	require.NoError(t, err)
	assert.Equal(t, uiTarget{Namespace: "pf-sluice", Service: "sluice-ui", Pod: "sluice-ui-b", Port: 8092}, got, "the ready pod, its http port")
	byName, err := findUI(ctx, env.Kube, "pf-sluice", "sluice-ui")
	require.NoError(t, err)
	assert.Equal(t, got, byName)

	_, err = env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pf-empty"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = findUI(ctx, env.Kube, "pf-empty", "")
	assert.ErrorContains(t, err, "no Service labelled app.kubernetes.io/name=ui with a port named http in namespace pf-empty: install charts/ui")
	_, err = findUI(ctx, env.Kube, "pf-empty", "sluice-ui")
	assert.ErrorContains(t, err, "the UI's Service pf-empty/sluice-ui")

	uiInstall(t, "pf-other")
	_, err = findUI(ctx, env.Kube, "", "")
	assert.ErrorContains(t, err, "several UI Services (pf-other/sluice-ui, pf-sluice/sluice-ui): choose one with -n and --service")

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, testenv.WriteKubeconfig(env.Config, kubeconfig))
	var stdout, stderr testenv.SyncBuffer
	runCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	code := Main(runCtx, []string{"ui", "--port-forward", "--kubeconfig", kubeconfig, "-n", "pf-sluice", "--listen", "127.0.0.1:0", "--open=false"}, &stdout, &stderr)
	assert.Equal(t, 1, code, "no kubelet to forward to: %s", stderr.String())
	assert.Contains(t, stderr.String(), "port-forward to pod pf-sluice/sluice-ui-b port 8092", "it names where it tried to go")
	assert.Empty(t, stdout.String(), "no URL is printed for a forward that never worked")
	t.Logf("kubectl sluice ui --port-forward says: %s", stderr.String())
}
