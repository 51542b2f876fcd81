package suite

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/sluicehq/sluice/e2e/harness"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// fluxSystem is where Flux's controllers run, as in any cluster.
const fluxSystem = flux.SystemNamespace

// fluxControllerNames are the controllers run as pods, each named after its image.
var fluxControllerNames = []string{"source-controller", "kustomize-controller"}

// fluxCRDs installs Flux's CRDs (testenv/flux: from the fluxcd Go modules) and deletes them when
// the test ends, so a later test sees them appear as a cluster without Flux would.
func (c *Cluster) fluxCRDs(t *testing.T) {
	t.Helper()
	paths, err := flux.CRDPaths()
	require.NoError(t, err)
	require.NoError(t, c.Env.InstallCRDPaths(paths...))
	var names []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		var crd metav1.PartialObjectMetadata
		require.NoError(t, yaml.Unmarshal(b, &crd))
		names = append(names, crd.Name)
	}
	t.Cleanup(func() { c.deleteCRDs(t, names) })
}

// fluxControllers runs source-controller and kustomize-controller v1.9.6 as pods in flux-system,
// from the images hack/e2e.sh builds from hack/tools/flux/build.sh's binaries, as upstream's
// config/manager deploys them (arguments, probes, read-only root, emptyDirs), under upstream's
// RBAC (config/rbac: each controller's manager-role and the leader-election Role), with one
// grant fewer: upstream also binds cluster-admin to kustomize-controller so that it can apply
// anything, while here it may only impersonate ServiceAccounts, and each Kustomization applies as
// the one it names (spec.serviceAccountName), with that account's rights and no more.
func (c *Cluster) fluxControllers(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, name := range fluxControllerNames {
		require.NotEmpty(t, c.Images.Refs[name], "no %s image: %s", name, harness.E2EImagesHint)
	}
	c.namespace(t, fluxSystem)
	c.fluxRBAC(t)
	_, err := c.Kube.CoreV1().Services(fluxSystem).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "source-controller"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "source-controller"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	source := c.fluxDeployment("source-controller", "/data",
		"--storage-path=/data", "--storage-adv-addr=source-controller.$(RUNTIME_NAMESPACE).svc.cluster.local.")
	source.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	source.Spec.Template.Spec.Containers[0].Ports = append(source.Spec.Template.Spec.Containers[0].Ports,
		corev1.ContainerPort{Name: "http", ContainerPort: 9090})
	// Upstream's readiness is the artifact server, the one kustomize-controller downloads from.
	source.Spec.Template.Spec.Containers[0].ReadinessProbe.HTTPGet = &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}
	// A Kustomization whose source has no artifact yet is retried after this (30s by default).
	kustomize := c.fluxDeployment("kustomize-controller", "", "--requeue-dependency=5s")
	start := time.Now()
	for _, d := range []*appsv1.Deployment{source, kustomize} {
		_, err := c.Kube.AppsV1().Deployments(fluxSystem).Create(ctx, d, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for _, name := range fluxControllerNames {
		testenv.WaitFor(t, 3*time.Minute, func() (bool, error) {
			d, err := c.Kube.AppsV1().Deployments(fluxSystem).Get(ctx, name, metav1.GetOptions{})
			return err == nil && d.Status.ReadyReplicas == 1 && d.Status.UpdatedReplicas == 1, err
		}, "Flux's %s pod is Ready\n%s", name, lazy(func() string { return c.diagnose(name) }))
	}
	figures.add("Flux's source-controller and kustomize-controller pods, created to Ready", time.Since(start))
}

// fluxDeployment is upstream's Deployment of a Flux controller (config/manager/deployment.yaml),
// from the imported image, running as the images' unprivileged user; dataDir, when set, is an
// emptyDir besides /tmp.
func (c *Cluster) fluxDeployment(name, dataDir string, args ...string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	mounts := []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}}
	volumes := []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	if dataDir != "" {
		mounts = append(mounts, corev1.VolumeMount{Name: "data", MountPath: dataDir})
		volumes = append(volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{PeriodSeconds: 2, ProbeHandler: corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("healthz")}}}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"control-plane": "controller"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName:            name,
					TerminationGracePeriodSeconds: ptr(int64(10)),
					SecurityContext:               restrictedPod(),
					Containers: []corev1.Container{{
						Name: "manager", Image: c.Images.Refs[name], ImagePullPolicy: corev1.PullNever,
						Args: append([]string{"--watch-all-namespaces", "--log-level=info", "--log-encoding=json",
							"--enable-leader-election"}, args...),
						Env: []corev1.EnvVar{
							{Name: "RUNTIME_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
							{Name: "TUF_ROOT", Value: "/tmp/.sigstore"},
						},
						Ports: []corev1.ContainerPort{
							{Name: "http-prom", ContainerPort: 8080},
							{Name: "healthz", ContainerPort: 9440},
						},
						ReadinessProbe:  probe("/readyz"),
						LivenessProbe:   probe("/healthz"),
						SecurityContext: restrictedContainer(),
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
						},
						VolumeMounts: mounts,
					}},
					Volumes: volumes,
				},
			},
		},
	}
}

// fluxRBAC creates each controller's ServiceAccount, upstream's manager-role of each (v1.9.6,
// config/rbac/role.yaml), its leader-election Role in flux-system, and, instead of upstream's
// cluster-admin binding for kustomize-controller, the right to impersonate ServiceAccounts.
// The cluster-wide objects are deleted when the test ends.
func (c *Cluster) fluxRBAC(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	read := []string{"get", "list", "watch"}
	edit := []string{"create", "delete", "get", "list", "patch", "update", "watch"}
	owned := []string{"create", "delete", "get", "patch", "update"}
	status := []string{"get", "patch", "update"}
	core := func(verbs []string, resources ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: resources, Verbs: verbs}
	}
	group := func(g string, verbs []string, resources ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{g}, Resources: resources, Verbs: verbs}
	}
	const src, kus = "source.toolkit.fluxcd.io", "kustomize.toolkit.fluxcd.io"
	roles := map[string][]rbacv1.PolicyRule{
		"source-controller": {
			core([]string{"create", "patch"}, "events"),
			core(read, "secrets", "serviceaccounts"),
			core([]string{"create"}, "serviceaccounts/token"),
			group(src, edit, "buckets", "gitrepositories", "helmcharts", "helmrepositories", "ocirepositories"),
			group(src, owned, "buckets/finalizers", "gitrepositories/finalizers", "helmcharts/finalizers", "helmrepositories/finalizers", "ocirepositories/finalizers"),
			group(src, status, "buckets/status", "gitrepositories/status", "helmcharts/status", "helmrepositories/status", "ocirepositories/status"),
		},
		"kustomize-controller": {
			core(read, "configmaps", "secrets", "serviceaccounts"),
			core([]string{"create", "patch"}, "events"),
			core([]string{"create"}, "serviceaccounts/token"),
			group(kus, edit, "kustomizations"),
			group(kus, owned, "kustomizations/finalizers"),
			group(kus, status, "kustomizations/status"),
			group(src, read, "buckets", "gitrepositories", "ocirepositories"),
			group(src, []string{"get"}, "buckets/status", "gitrepositories/status", "ocirepositories/status"),
			// In place of upstream's cluster-admin: apply as the Kustomization's ServiceAccount.
			core([]string{"impersonate"}, "serviceaccounts"),
		},
	}
	leaderElection := []rbacv1.PolicyRule{
		core([]string{"get", "list", "watch", "create", "update", "patch", "delete"}, "configmaps"),
		core(status, "configmaps/status"),
		core([]string{"create"}, "events"),
		group("coordination.k8s.io", []string{"get", "list", "watch", "create", "update", "patch", "delete"}, "leases"),
	}
	rbac := c.Kube.RbacV1()
	for _, name := range fluxControllerNames {
		sa := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: fluxSystem}}
		_, err := c.Kube.CoreV1().ServiceAccounts(fluxSystem).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
		cluster := "e2e-flux-" + name
		t.Cleanup(func() {
			for _, err := range []error{
				rbac.ClusterRoleBindings().Delete(ctx, cluster, metav1.DeleteOptions{}),
				rbac.ClusterRoles().Delete(ctx, cluster, metav1.DeleteOptions{}),
			} {
				if err != nil && !apierrors.IsNotFound(err) {
					assert.NoError(t, err)
				}
			}
		})
		_, err = rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: cluster}, Rules: roles[name]}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: cluster},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cluster}, Subjects: sa}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = rbac.Roles(fluxSystem).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name + "-leader-election"}, Rules: leaderElection}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = rbac.RoleBindings(fluxSystem).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-leader-election"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name + "-leader-election"}, Subjects: sa}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}
