package suite

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// diagnose describes every pod that is not Ready, with its events and the end of its logs, and
// the end of the kubelet's log: what a failed install or wait needs to be understood.
func (c *Cluster) diagnose(what any) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "diagnosis after %v:\n", what)
	pods, err := c.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return b.String() + err.Error()
	}
	for _, p := range pods.Items {
		if podReady(&p) {
			continue
		}
		fmt.Fprintf(&b, "pod %s/%s phase %s\n", p.Namespace, p.Name, p.Status.Phase)
		for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			fmt.Fprintf(&b, "  container %s ready=%t restarts=%d state=%s\n", cs.Name, cs.Ready, cs.RestartCount, containerState(cs))
			fmt.Fprintf(&b, "  logs:\n%s\n", indent(c.logs(ctx, p.Namespace, p.Name, cs.Name), "    "))
		}
		events, _ := c.Kube.CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + p.Name})
		for _, e := range events.Items {
			fmt.Fprintf(&b, "  event %s %s: %s\n", e.Type, e.Reason, e.Message)
		}
	}
	fmt.Fprintf(&b, "kubelet log (end):\n%s\n", indent(c.Node.LogTail("kubelet", 20), "  "))
	return b.String()
}

func (c *Cluster) logs(ctx context.Context, ns, pod, container string) string {
	tail := int64(20)
	b, err := c.Kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, TailLines: &tail}).DoRaw(ctx)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func containerState(cs corev1.ContainerStatus) string {
	switch s := cs.State; {
	case s.Waiting != nil:
		return "waiting: " + s.Waiting.Reason + " " + s.Waiting.Message
	case s.Terminated != nil:
		return fmt.Sprintf("terminated: %s exit %d %s", s.Terminated.Reason, s.Terminated.ExitCode, s.Terminated.Message)
	case s.Running != nil:
		return "running"
	}
	return "unknown"
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n")
}

// controllerLogs is the end of the logs of every pod of a controller, in any namespace.
func (c *Cluster) controllerLogs(chart string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods, err := c.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + chart})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "logs of %s/%s:\n%s\n", p.Namespace, p.Name, indent(c.logs(ctx, p.Namespace, p.Name, "controller"), "  "))
	}
	return b.String()
}
