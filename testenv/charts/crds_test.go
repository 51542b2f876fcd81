package charts

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/sluicehq/sluice/testenv"
)

// Every CRD in api/crds belongs to exactly one chart: it is in that chart's files/crds, rendered
// by that chart alone, and listed in its artifacthub.io/crds annotation.
func TestEveryCRDHasExactlyOneOwnerChart(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	generated, err := filepath.Glob(filepath.Join(root, "api", "crds", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, generated)
	dirs, err := Controllers()
	require.NoError(t, err)
	helm := renderer(t)

	owners := map[string][]string{}
	for _, dir := range dirs {
		chart := filepath.Base(dir)
		owned := ownedCRDs(t, dir)
		for _, crd := range owned {
			owners[crd] = append(owners[crd], chart)
		}
		rendered := renderCRDs(t, helm, dir)
		assert.ElementsMatch(t, owned, rendered, "%s renders exactly the CRDs it owns", chart)
		assert.ElementsMatch(t, owned, artifactHubCRDs(t, dir), "%s lists its CRDs in artifacthub.io/crds", chart)
	}
	for _, file := range generated {
		group, plural, _ := strings.Cut(strings.TrimSuffix(filepath.Base(file), ".yaml"), "_")
		name := plural + "." + group
		assert.Len(t, owners[name], 1, "CRD %s has one owner chart, not %v", name, owners[name])
	}
}

// CRDs are templates: crds.enabled leaves them out, crds.keep marks them for Helm and Argo CD.
func TestCRDValues(t *testing.T) {
	dir := chartDir(t, "commitstatus-controller")
	helm := renderer(t)
	out, err := helm.Template(context.Background(), "cs", "sluice-system", dir, nil)
	require.NoError(t, err)
	objs, err := Objects(out)
	require.NoError(t, err)
	crds := OfKind(objs, "CustomResourceDefinition")
	require.Len(t, crds, 3)
	for _, crd := range crds {
		assert.Equal(t, "keep", crd.GetAnnotations()["helm.sh/resource-policy"], crd.GetName())
		assert.Equal(t, "Prune=false,Delete=false", crd.GetAnnotations()["argocd.argoproj.io/sync-options"], crd.GetName())
		assert.Equal(t, "sluice", crd.GetLabels()["app.kubernetes.io/part-of"])
	}

	out, err = helm.Template(context.Background(), "cs", "sluice-system", dir, nil, "crds.keep=false")
	require.NoError(t, err)
	objs, err = Objects(out)
	require.NoError(t, err)
	for _, crd := range OfKind(objs, "CustomResourceDefinition") {
		assert.NotContains(t, crd.GetAnnotations(), "helm.sh/resource-policy")
		assert.NotContains(t, crd.GetAnnotations(), "argocd.argoproj.io/sync-options")
	}

	out, err = helm.Template(context.Background(), "cs", "sluice-system", dir, nil, "crds.enabled=false")
	require.NoError(t, err)
	objs, err = Objects(out)
	require.NoError(t, err)
	assert.Empty(t, OfKind(objs, "CustomResourceDefinition"))
}

// Helm owns the CRDs like any other object of the release: an upgrade changes them, and removing
// the promoter's release (as pruning its Argo CD Application would) never removes the SCM and
// CommitStatus kinds the promoter reads, which the commitstatus-controller's release owns.
func TestCRDsFollowTheirReleaseAndNoOther(t *testing.T) {
	testenv.SkipIfShort(t)
	ctx := context.Background()
	env := startEmpty(t)
	helm := newHelm(t, env)
	commitstatus, promoter := chartDir(t, "commitstatus-controller"), chartDir(t, "promoter-controller")
	require.NoError(t, helm.Install(ctx, "commitstatus-controller", "sluice-system", commitstatus))
	require.NoError(t, helm.Install(ctx, "promoter-controller", "sluice-system", promoter))
	scmCRDs := waitCRDs(t, env, ownedCRDs(t, commitstatus))
	promoterCRDs := waitCRDs(t, env, ownedCRDs(t, promoter))

	crd, err := env.Dynamic.Resource(crdGVR).Get(ctx, promoterCRDs[0], metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "promoter-controller", crd.GetAnnotations()["meta.helm.sh/release-name"], "the release owns its CRDs")
	assert.Equal(t, "keep", crd.GetAnnotations()["helm.sh/resource-policy"])

	// An upgrade applies the CRDs again: here it drops the keep policy, so the uninstall removes them.
	require.NoError(t, helm.Upgrade(ctx, "promoter-controller", "sluice-system", promoter, "crds.keep=false"))
	crd, err = env.Dynamic.Resource(crdGVR).Get(ctx, promoterCRDs[0], metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, crd.GetAnnotations(), "helm.sh/resource-policy", "helm upgrade upgrades the CRDs")

	require.NoError(t, helm.Uninstall(ctx, "promoter-controller", "sluice-system"))
	for _, name := range promoterCRDs {
		_, err := env.Dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			crd, _ := env.Dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			assert.NotNil(t, crd.GetDeletionTimestamp(), "without crds.keep the release's CRD %s goes with it", name)
			continue
		}
		assert.True(t, apierrors.IsNotFound(err), "without crds.keep the release's CRD %s goes with it", name)
	}
	for _, name := range scmCRDs {
		crd, err := env.Dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, "CRD %s, owned by the commitstatus-controller release, stays", name)
		assert.Nil(t, crd.GetDeletionTimestamp(), name)
	}
}

// The gate-controller's ClusterRole patches exactly the kinds of its targets value, which also
// renders --targets; the default covers every Sluice kind by name, never "*".
func TestGateTargetsDriveTheFlagAndTheRBAC(t *testing.T) {
	dir := chartDir(t, "gate-controller")
	helm := renderer(t)
	out, err := helm.Template(context.Background(), "gate-controller", "sluice-system", dir, nil)
	require.NoError(t, err)
	objs, err := Objects(out)
	require.NoError(t, err)
	flagTargets, patchable := targetsAndPatchRules(t, objs, "gate-controller")
	assert.ElementsMatch(t, flagTargets, patchable, "--targets and the ClusterRole name the same resources")
	assert.NotContains(t, strings.Join(patchable, ","), "*")

	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	generated, err := filepath.Glob(filepath.Join(root, "api", "crds", "*.yaml"))
	require.NoError(t, err)
	for _, file := range generated {
		group, plural, _ := strings.Cut(strings.TrimSuffix(filepath.Base(file), ".yaml"), "_")
		assert.Contains(t, flagTargets, plural+"."+group, "the gate-controller holds every Sluice kind by default")
	}
	assert.Contains(t, flagTargets, "applications.argoproj.io", "Argo CD Applications are held by default")
	assert.NotContains(t, out, "appprojects", "holding an Application needs no right on AppProjects")

	out, err = helm.Template(context.Background(), "gate-controller", "sluice-system", dir, nil,
		"targets[0].group=kustomize.toolkit.fluxcd.io", "targets[0].resources[0]=kustomizations", "targets[0].mode=spec")
	require.NoError(t, err)
	objs, err = Objects(out)
	require.NoError(t, err)
	flagTargets, patchable = targetsAndPatchRules(t, objs, "gate-controller")
	assert.Equal(t, []string{"kustomizations.kustomize.toolkit.fluxcd.io"}, flagTargets)
	assert.Equal(t, []string{"kustomizations.kustomize.toolkit.fluxcd.io"}, patchable)
}

// targetsAndPatchRules returns the resources of --targets and those the ClusterRole lets patch.
func targetsAndPatchRules(t *testing.T, objs []*unstructured.Unstructured, release string) (flagTargets, patchable []string) {
	t.Helper()
	args, err := ContainerArgs(objs, release)
	require.NoError(t, err)
	value, ok := Flag(args, "targets")
	require.True(t, ok)
	for _, entry := range strings.Split(value, ",") {
		resource, _, _ := strings.Cut(entry, "=")
		flagTargets = append(flagTargets, resource)
	}
	for _, role := range OfKind(objs, "ClusterRole") {
		rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
		for _, r := range rules {
			rule := r.(map[string]any)
			if !slices.Contains(stringsOf(rule["verbs"]), "patch") {
				continue
			}
			for _, group := range stringsOf(rule["apiGroups"]) {
				for _, resource := range stringsOf(rule["resources"]) {
					if strings.HasSuffix(resource, "/status") || resource == "events" {
						continue // its own kinds' status and its Events, not targets
					}
					patchable = append(patchable, strings.TrimSuffix(resource+"."+group, "."))
				}
			}
		}
	}
	sort.Strings(flagTargets)
	sort.Strings(patchable)
	return flagTargets, patchable
}

func stringsOf(v any) []string {
	items, _ := v.([]any)
	out := make([]string, 0, len(items))
	for _, i := range items {
		s, _ := i.(string)
		out = append(out, s)
	}
	return out
}

func chartDir(t *testing.T, name string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	return filepath.Join(root, "charts", name)
}

// renderer is a Helm for `helm template` and `helm lint`, which need no control plane.
func renderer(t *testing.T) *Helm {
	t.Helper()
	helm, err := NewHelm(&testenv.Env{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = helm.Close() })
	return helm
}

func renderCRDs(t *testing.T, helm *Helm, dir string) []string {
	t.Helper()
	out, err := helm.Template(context.Background(), filepath.Base(dir), "sluice-system", dir, nil)
	require.NoError(t, err)
	objs, err := Objects(out)
	require.NoError(t, err)
	var names []string
	for _, crd := range OfKind(objs, "CustomResourceDefinition") {
		names = append(names, crd.GetName())
	}
	return names
}

func artifactHubCRDs(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	require.NoError(t, err)
	var chart struct {
		Annotations map[string]string `json:"annotations"`
	}
	require.NoError(t, yaml.Unmarshal(data, &chart))
	var crds []struct {
		Name string `json:"name"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(chart.Annotations["artifacthub.io/crds"]), &crds))
	var names []string
	for _, c := range crds {
		names = append(names, c.Name)
	}
	return names
}
