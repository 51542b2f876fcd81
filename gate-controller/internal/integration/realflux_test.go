package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// realFlux is a test's own namespace with real source-controller and kustomize-controller
// watching only it, a repository served over smart HTTP, and a GitRepository and Kustomization
// that deploy the repository's branch main into the namespace.
type realFlux struct {
	ns     string
	repo   *gittest.Repo
	url    string
	flux   *flux.Controllers
	source object
	ks     object
}

// fluxConfigMap is the object the repository deploys: data.value says which commit is live, and
// data.static never changes in git, so a test can drift it in the cluster.
const fluxConfigMap = "app"

// startRealFlux sets up realFlux with a first commit whose value is "A"; WaitForApplied
// waits for Flux to apply it. interval is both the fetch and the apply interval. With a gate name, an open Gate of
// that name is created first and the Kustomization waits for it.
func startRealFlux(t *testing.T, interval time.Duration, gateName string) (*realFlux, string) {
	t.Helper()
	ns := newNamespace(t)
	var ksAnnotations map[string]string
	if gateName != "" {
		createGate(t, ns, gateName, gatingv1alpha1.GateSpec{})
		waitGate(t, ns, gateName, wait, isOpen)
		ksAnnotations = map[string]string{gate.GatesAnnotation: gateName}
	}
	f := &realFlux{ns: ns}
	f.repo, f.url = gittest.NewGitServedRepo(t, "fleet")
	first := f.commit(t, "A")
	f.flux = flux.Start(t, env, flux.Options{Namespace: ns})
	flux.CreateGitRepository(t, env, ns, "fleet", flux.GitRepositorySpec{URL: f.url, Branch: "main", Interval: interval})
	f.source = object{gvr: flux.GitRepositories, kind: "GitRepository", namespace: ns, name: "fleet"}
	flux.CreateKustomization(t, env, ns, "apps", flux.KustomizationSpec{GitRepository: "fleet", TargetNamespace: ns, Interval: interval, Annotations: ksAnnotations})
	f.ks = object{gvr: flux.Kustomizations, kind: "Kustomization", namespace: ns, name: "apps"}
	return f, first
}

// commit pushes a commit on main whose ConfigMap carries value.
func (f *realFlux) commit(t *testing.T, value string) string {
	t.Helper()
	manifest := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n  static: from-git\n", fluxConfigMap, value)
	return f.repo.CommitFiles(t, "main", map[string]string{"configmap.yaml": manifest}, "value "+value)
}

// live is the data of the ConfigMap in the cluster, as Flux applied it (nil when absent).
func (f *realFlux) live(t *testing.T) map[string]string {
	t.Helper()
	cm, err := env.Kube.CoreV1().ConfigMaps(f.ns).Get(context.Background(), fluxConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return cm.Data
}

// liveValue is data.value of the ConfigMap in the cluster ("" when absent).
func (f *realFlux) liveValue(t *testing.T) string { return f.live(t)["value"] }

// Real source-controller fetches a commit served over HTTP on loopback and real
// kustomize-controller applies it: the ConfigMap is read back from the cluster, and a second
// commit replaces it.
func TestRealFluxAppliesTheBranchToTheCluster(t *testing.T) {
	testenv.SkipIfShort(t)
	f, first := startRealFlux(t, 2*time.Second, "")
	flux.WaitForApplied(t, env, f.ns, "apps", flux.Revision("main", first))
	require.Equal(t, "A", f.liveValue(t))

	second := f.commit(t, "B")
	flux.WaitForApplied(t, env, f.ns, "apps", flux.Revision("main", second))
	require.Equal(t, "B", f.liveValue(t))
}
