package integration

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/argocd"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// TestAHeldArgoCDApplicationOffersNoApproval: with Argo CD's CRDs installed for this test alone,
// the real gate-controller holds an Application and a Kustomization under a closed gate that
// approves a revision. The gate's page offers "Approve this revision…" on the Kustomization and
// not on the Application, whose revisions the gate-controller does not approve: its hold reason
// says so.
func TestAHeldArgoCDApplicationOffersNoApproval(t *testing.T) {
	installArgoCD(t)
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	gateController(t)
	ns := newNamespace(t)
	ctx := context.Background()
	_, err := env.Sluice.GatingV1alpha1().Gates(ns).Create(ctx, &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "freeze"},
		Spec: gatingv1alpha1.GateSpec{Closed: true, Message: "release freeze", Approvals: []gatingv1alpha1.GateApproval{{Revision: "6.0.1", By: "someone"}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	createKustomization(t, ns, "apps", "freeze")
	apps := env.Dynamic.Resource(argocd.Applications).Namespace(ns)
	_, err = apps.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": argocd.Applications.GroupVersion().String(), "kind": "Application",
		"metadata": map[string]any{"name": "web", "namespace": ns, "annotations": map[string]any{gate.GatesAnnotation: "freeze"}},
		"spec": map[string]any{"project": "default",
			"source":      map[string]any{"repoURL": "https://git.example.com/shop.git", "path": "deploy", "targetRevision": "main"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "shop"},
			"syncPolicy":  map[string]any{"automated": map[string]any{"prune": true}}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	var reason string
	testenv.WaitFor(t, time.Minute, func() (bool, error) {
		a, err := apps.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, recorded := a.GetAnnotations()[gate.HoldAnnotation]
		reason = a.GetAnnotations()[suspend.Annotation]
		return recorded && reason != "", nil
	}, "the gate-controller holds the Application")
	assert.Contains(t, reason, "approvals apply to Kustomizations and HelmReleases")

	b := browser(t)
	signIn(b, t, url)
	row := func(name string) string {
		return `//table[@id="targets"]//tr[td[contains(., "` + ns + `/` + name + `")]]`
	}
	within(b, t, chromedp.Navigate(url+"/gates/"+ns+"/freeze"), chromedp.WaitVisible(css(`#live.on`)),
		chromedp.WaitVisible(chromedp.Search(row("apps")+`//a[@data-approve]`)),
		chromedp.WaitVisible(chromedp.Search(row("web")+`[contains(., "held")][contains(., "Application")]`)))
	offered := read(b, t, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#targets a[data-approve]')].map(a => a.getAttribute('href'))`))
	assert.Equal(t, []string{"/act/approve/" + ns + "/freeze?target=Kustomization/" + ns + "/apps"}, offered, "none for the Application")
}

// installArgoCD installs Argo CD's CRDs until the test ends; the other tests of the package run
// without them (a page names Argo CD as not installed).
func installArgoCD(t *testing.T) {
	t.Helper()
	paths, err := argocd.CRDPaths()
	require.NoError(t, err)
	require.NoError(t, env.InstallCRDPaths(paths...))
	ext, err := apiextensionsclient.NewForConfig(env.Config)
	require.NoError(t, err)
	t.Cleanup(func() {
		crds := ext.ApiextensionsV1().CustomResourceDefinitions()
		for _, name := range []string{"applications.argoproj.io", "appprojects.argoproj.io"} {
			if err := crds.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		}
		// Gone from the API server's watch cache, which answers the informers' first list (a
		// resource version of "0"), not only from etcd: a UI started later must not list them
		// and then see them removed.
		testenv.WaitFor(t, 2*time.Minute, func() (bool, error) {
			list, err := crds.List(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
			if err != nil {
				return false, err
			}
			for _, crd := range list.Items {
				if crd.Spec.Group == "argoproj.io" {
					return false, nil
				}
			}
			return true, nil
		}, "Argo CD's CRDs are removed")
	})
}
