package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func createDeployment(t *testing.T, ns, name string, labels map[string]string) {
	t.Helper()
	replicas := int32(2)
	selector := map[string]string{"deployment": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selector},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "ghcr.io/example/" + name + ":1.0.0"}}},
			},
		},
	}
	_, err := env.Kube.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{})
	require.NoError(t, err)
}

// updateDeploymentStatus writes status as the deployment controller would, for the current
// generation.
func updateDeploymentStatus(t *testing.T, ns, name string, mutate func(*appsv1.Deployment)) {
	t.Helper()
	d, err := env.Kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	d.Status.ObservedGeneration = d.Generation
	mutate(d)
	_, err = env.Kube.AppsV1().Deployments(ns).UpdateStatus(context.Background(), d, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// rolledOut is the status of a finished rollout: every replica updated and available.
func rolledOut(t *testing.T, ns, name string) {
	t.Helper()
	updateDeploymentStatus(t, ns, name, func(d *appsv1.Deployment) {
		n := *d.Spec.Replicas
		d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = n, n, n, n
		d.Status.Conditions = []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: "ReplicaSet has successfully progressed."},
		}
	})
}

// progressDeadlineExceeded is a rollout whose new pods never became ready.
func progressDeadlineExceeded(t *testing.T, ns, name string) {
	t.Helper()
	updateDeploymentStatus(t, ns, name, func(d *appsv1.Deployment) {
		n := *d.Spec.Replicas
		d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Status.UnavailableReplicas = n+1, 1, n, n, 1
		d.Status.Conditions = []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
				Message: `ReplicaSet "` + name + `-7d4b9c" has timed out progressing.`},
		}
	})
}

func labelDeployment(t *testing.T, ns, name string, labels map[string]string) {
	t.Helper()
	d, err := env.Kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	d.Labels = labels
	_, err = env.Kube.AppsV1().Deployments(ns).Update(context.Background(), d, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// bumpImage changes the pod template, as a new revision would: generation goes up and the
// rollout starts over.
func bumpImage(t *testing.T, ns, name, image string) {
	t.Helper()
	d, err := env.Kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	d.Spec.Template.Spec.Containers[0].Image = image
	_, err = env.Kube.AppsV1().Deployments(ns).Update(context.Background(), d, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func service(ns, name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"deployment": name}, Ports: []corev1.ServicePort{{Port: 80}}},
	}
}
