package integration

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// TestAGatePageListsTheKustomizationsThatReferenceIt: the UI reads Flux Kustomizations through
// a metadata informer; a Kustomization that names a closed gate appears on the gate's page as
// soon as it is created, held by the real gate-controller with the reason it wrote, and one that
// names another gate does not. Argo CD's CRD is not installed here: the page says so quietly.
func TestAGatePageListsTheKustomizationsThatReferenceIt(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	gateController(t)
	ns := newNamespace(t)
	_, err := env.Sluice.GatingV1alpha1().Gates(ns).Create(context.Background(), &gatingv1alpha1.Gate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "freeze"},
		Spec:       gatingv1alpha1.GateSpec{Closed: true, Message: "release 1.4 sign-off"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	createGate(t, ns, "other")

	b := browser(t)
	signIn(b, t, url)
	within(b, t, chromedp.Navigate(url+"/gates/"+ns+"/freeze"), chromedp.WaitVisible(css(`#live.on`)),
		chromedp.WaitVisible(css(`#targets-missing`)))
	missing := read(b, t, chromedp.Text(css(`#targets-missing`)))
	assert.Contains(t, missing, "Application (Argo CD)", "Argo CD's CRD is not installed")
	assert.NotContains(t, missing, "Kustomization", "Flux's CRDs are")
	assert.Zero(t, read(b, t, chromedp.Evaluate[int](`document.querySelectorAll('#error').length`)), "a missing CRD is no error")

	// Created after the page loaded: the page follows the informers live.
	createKustomization(t, ns, "apps", "freeze")
	createKustomization(t, ns, "elsewhere", "other")
	var reason string
	testenv.WaitFor(t, time.Minute, func() (bool, error) {
		k, err := env.Dynamic.Resource(flux.Kustomizations).Namespace(ns).Get(context.Background(), "apps", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		reason = k.GetAnnotations()["reconcile.fluxcd.io/suspended"]
		return reason != "" && k.GetAnnotations()["gating.sluice.dev/hold"] != "", nil
	}, "the gate-controller holds the Kustomization")
	row := `//table[@id="targets"]//tr[td[contains(., "` + ns + `/apps")]]`
	within(b, t, chromedp.WaitVisible(chromedp.Search(row+`[contains(., "held")]`)))
	text := read(b, t, chromedp.Text(chromedp.Search(row)))
	assert.Contains(t, text, "Kustomization")
	assert.Contains(t, text, reason, "the suspend reason the gate-controller wrote")
	table := read(b, t, chromedp.Text(css(`#targets`)))
	assert.NotContains(t, table, ns+"/elsewhere", "it references another gate")
}
