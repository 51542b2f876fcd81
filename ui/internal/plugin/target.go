package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// uiServiceLabel finds the Service of charts/ui (alone or from the umbrella chart): the chart's
// name, in the label every chart puts on its objects.
const uiServiceLabel = "app.kubernetes.io/name=ui"

// uiTarget is where a port-forward to the in-cluster UI goes: a ready pod behind its Service,
// and the pod's port the Service sends to.
type uiTarget struct {
	Namespace, Service, Pod string
	Port                    int32
}

// findUI finds the UI's Service (named service in namespace, else the one labelled as charts/ui's
// in namespace, or in every namespace when namespace is empty), a ready pod behind it, and the
// port, as kubectl port-forward svc/NAME does.
func findUI(ctx context.Context, kube kubernetes.Interface, namespace, service string) (uiTarget, error) {
	svc, err := uiService(ctx, kube, namespace, service)
	if err != nil {
		return uiTarget{}, err
	}
	if len(svc.Spec.Selector) == 0 {
		return uiTarget{}, fmt.Errorf("Service %s/%s selects no pods", svc.Namespace, svc.Name)
	}
	selector := labels.SelectorFromSet(svc.Spec.Selector).String()
	pods, err := kube.CoreV1().Pods(svc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return uiTarget{}, fmt.Errorf("the pods of Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	pod, err := readyPod(pods.Items)
	if err != nil {
		return uiTarget{}, fmt.Errorf("Service %s/%s: %w (kubectl -n %s get pods -l %s)", svc.Namespace, svc.Name, err, svc.Namespace, selector)
	}
	port, err := podPort(svc, pod)
	if err != nil {
		return uiTarget{}, fmt.Errorf("Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return uiTarget{Namespace: svc.Namespace, Service: svc.Name, Pod: pod.Name, Port: port}, nil
}

// uiService is the named Service, or the only one labelled as the UI's that serves the pages.
func uiService(ctx context.Context, kube kubernetes.Interface, namespace, name string) (*corev1.Service, error) {
	if name != "" {
		svc, err := kube.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("the UI's Service %s/%s: %w", namespace, name, err)
		}
		return svc, nil
	}
	list, err := kube.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{LabelSelector: uiServiceLabel})
	if err != nil {
		return nil, fmt.Errorf("looking for the UI's Service (label %s)%s: %w", uiServiceLabel, where(namespace), err)
	}
	// The chart's metrics Service carries the same labels: the pages' Service is the one with
	// the port named http.
	pages := slices.DeleteFunc(list.Items, func(s corev1.Service) bool {
		return !slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "http" })
	})
	switch len(pages) {
	case 0:
		return nil, fmt.Errorf("no Service labelled %s with a port named http%s: install charts/ui (or the umbrella chart with ui.enabled=true), name its Service with --service, or run without --port-forward to serve the UI on this machine", uiServiceLabel, where(namespace))
	case 1:
		return &pages[0], nil
	}
	names := make([]string, len(pages))
	for i, s := range pages {
		names[i] = s.Namespace + "/" + s.Name
	}
	slices.Sort(names)
	return nil, fmt.Errorf("several UI Services (%s): choose one with -n and --service", strings.Join(names, ", "))
}

func where(namespace string) string {
	if namespace == "" {
		return " in any namespace"
	}
	return " in namespace " + namespace
}

// readyPod picks a running, ready pod not being deleted, the first by name, so that two runs
// pick the same one.
func readyPod(pods []corev1.Pod) (*corev1.Pod, error) {
	var ready []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(p) {
			ready = append(ready, p)
		}
	}
	if len(ready) == 0 {
		return nil, fmt.Errorf("no ready pod among its %d", len(pods))
	}
	slices.SortFunc(ready, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return ready[0], nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podPort is the pod's port that the Service's port "http" (or its only port) sends to: the
// target port's number, or the number of the container port it names.
func podPort(svc *corev1.Service, pod *corev1.Pod) (int32, error) {
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Name == "http" || len(svc.Spec.Ports) == 1 {
			sp = &svc.Spec.Ports[i]
			break
		}
	}
	if sp == nil {
		return 0, fmt.Errorf("no port named http among its %d ports", len(svc.Spec.Ports))
	}
	switch {
	case sp.TargetPort.Type == intstr.String:
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				if p.Name == sp.TargetPort.StrVal {
					return p.ContainerPort, nil
				}
			}
		}
		return 0, fmt.Errorf("pod %s has no container port named %q", pod.Name, sp.TargetPort.StrVal)
	case sp.TargetPort.IntVal != 0:
		return sp.TargetPort.IntVal, nil
	}
	return sp.Port, nil
}
