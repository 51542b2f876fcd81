package charts

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sluicehq/sluice/testenv"
)

// Every chart's schema (generated from hack/chart-common) refuses values that cannot work, and
// the umbrella chart's refuses them in its subcharts' sections too.
func TestValuesSchemaRejectsBadValues(t *testing.T) {
	dirs, err := Charts()
	require.NoError(t, err)
	helm := renderer(t)
	bad := map[string]string{
		"workers=0":                                     "workers",
		"log.format=xml":                                "format",
		"podDisruptionBudget.maxUnavailable=0":          "maxUnavailable",
		"image.digest=latest":                           "digest",
		"priorityClassName=Not_A_Name":                  "priorityClassName",
		"imagePullSecrets[0].secret=regcred":            "imagePullSecrets",
		"topologySpreadConstraints[0].maxSkew=1":        "topologySpreadConstraints",
		"crds.enabled=yes":                              "enabled",
		"networkPolicy.egress.ports[0]=70000":           "ports",
		"nodeSelecter.zone=a":                           "nodeSelecter",
		"metrics.serviceMonitor.interval=half a minute": "interval",
		"nameOverride=Gates":                            "nameOverride",
		"fullnameOverride=" + strings.Repeat("a", 56):   "fullnameOverride",
	}
	for _, dir := range dirs {
		for set, field := range bad {
			assertRefused(t, helm, dir, field, set)
		}
	}
	// A target resource * would grant patch on every resource of a group.
	assertRefused(t, helm, chartDir(t, "gate-controller"), "/targets/0/resources/0", "targets[0].group=apps", "targets[0].resources[0]=*", "targets[0].mode=spec")

	umbrella := buildUmbrella(t)
	for set, field := range map[string]string{
		"gate-controller.workers=0":                                "workers",
		"monitoring.prometheusRules.for.stalled=a while":           "stalled",
		"monitoring.dashboard.enabled=sometimes":                   "enabled",
		"promoter-controller.podDisruptionBudget.maxUnavailable=0": "maxUnavailable",
	} {
		assertRefused(t, helm, umbrella, field, set)
	}
}

// assertRefused checks that helm lint fails on set, and that its output names field.
func assertRefused(t *testing.T, helm *Helm, chart, field string, set ...string) {
	t.Helper()
	out, err := helm.LintOutput(context.Background(), chart, set...)
	if assert.Error(t, err, "%s: values.schema.json refuses %v", filepath.Base(chart), set) {
		assert.Contains(t, out, field, "%s: helm names the refused value of %v", filepath.Base(chart), set)
	}
}

// The production values render into objects the API server accepts, on every chart.
func TestProductionValuesInstall(t *testing.T) {
	testenv.SkipIfShort(t)
	ctx := context.Background()
	env := startEmpty(t)
	helm := newHelm(t, env)
	digest := "sha256:" + strings.Repeat("ab", 32)
	production := []string{
		"global.imageRegistry=mirror.example",
		"global.imageTag=1.2.3",
		"global.imagePullSecrets[0].name=org-pull",
		"imagePullSecrets[0].name=chart-pull",
		"image.digest=" + digest,
		"priorityClassName=system-cluster-critical",
		"podLabels.team=platform",
		"podAnnotations.example\\.com/owner=platform",
		"topologySpreadConstraints[0].maxSkew=1",
		"topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone",
		"topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway",
		"podDisruptionBudget.enabled=true",
		"networkPolicy.enabled=true",
		"networkPolicy.egress.enabled=true",
		"networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.name=monitoring",
		"replicaCount=1",
	}
	dirs, err := Charts()
	require.NoError(t, err)
	for _, dir := range dirs {
		name := filepath.Base(dir)
		require.NoError(t, helm.Install(ctx, name, "sluice-system", dir, production...), name)

		d, err := env.Kube.AppsV1().Deployments("sluice-system").Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		pod := d.Spec.Template
		assert.Equal(t, "mirror.example/sluicehq/"+Image(name)+":1.2.3@"+digest, pod.Spec.Containers[0].Image)
		assert.Equal(t, []corev1.LocalObjectReference{{Name: "org-pull"}, {Name: "chart-pull"}}, pod.Spec.ImagePullSecrets)
		assert.Equal(t, "system-cluster-critical", pod.Spec.PriorityClassName)
		assert.Equal(t, "platform", pod.Labels["team"])
		assert.Equal(t, "platform", pod.Annotations["example.com/owner"])
		require.Len(t, pod.Spec.TopologySpreadConstraints, 1)
		assert.Equal(t, d.Spec.Selector.MatchLabels, pod.Spec.TopologySpreadConstraints[0].LabelSelector.MatchLabels,
			"a constraint without a labelSelector spreads this release's pods")

		// At one replica the budget still lets one pod go: a drain is never blocked.
		pdb, err := env.Kube.PolicyV1().PodDisruptionBudgets("sluice-system").Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Nil(t, pdb.Spec.MinAvailable)
		assert.Equal(t, intstr.FromInt32(1), *pdb.Spec.MaxUnavailable)

		np, err := env.Kube.NetworkingV1().NetworkPolicies("sluice-system").Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Len(t, np.Spec.PolicyTypes, 2, "ingress and egress")
		assert.Equal(t, "monitoring", np.Spec.Ingress[0].From[0].NamespaceSelector.MatchLabels["name"], "metrics only from monitoring")
	}
}

// nameOverride and fullnameOverride name every object of a release and its Lease, and
// nameOverride its app.kubernetes.io/name label, as in most Helm charts; unset, names are as before.
func TestNameOverridesNameEveryObject(t *testing.T) {
	dirs, err := Charts()
	require.NoError(t, err)
	helm := renderer(t)
	for _, dir := range dirs {
		chart := filepath.Base(dir)
		for _, c := range []struct {
			set            []string
			fullname, name string
		}{
			{nil, "sluice-" + chart, chart},
			{[]string{"nameOverride=ctl"}, "sluice-ctl", "ctl"},
			{[]string{"fullnameOverride=platform-ctl"}, "platform-ctl", chart},
		} {
			set := append([]string{"networkPolicy.enabled=true", "podDisruptionBudget.enabled=true"}, c.set...)
			if chart == "promoter-controller" {
				set = append(set, "webhook.enabled=true")
			}
			out, err := helm.Template(context.Background(), "sluice", "sluice-system", dir, nil, set...)
			require.NoError(t, err, "%s %v", chart, c.set)
			objs, err := Objects(out)
			require.NoError(t, err)
			for _, o := range objs {
				// CRDs have fixed names, and the health library ConfigMap is named by library.name.
				if o.GetKind() == "CustomResourceDefinition" || o.GetName() == "health-library" {
					continue
				}
				assert.True(t, o.GetName() == c.fullname || strings.HasPrefix(o.GetName(), c.fullname+"-"),
					"%s %v: %s %s is named after %s", chart, c.set, o.GetKind(), o.GetName(), c.fullname)
				if labels := o.GetLabels(); labels != nil {
					assert.Equal(t, c.name, labels["app.kubernetes.io/name"], "%s %v: %s %s", chart, c.set, o.GetKind(), o.GetName())
				}
			}
			args, err := ContainerArgs(objs, c.fullname)
			require.NoError(t, err, "%s %v: a Deployment named %s", chart, c.set, c.fullname)
			id, _ := Flag(args, "leader-election-id")
			assert.Equal(t, c.fullname+"-leader", id, "%s %v", chart, c.set)
		}
	}
}
