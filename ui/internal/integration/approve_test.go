package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// TestApproveThisDrySHAFromTheCardLetsExactlyItThrough: prod waits on a gate closed by hand for
// a proposed dry SHA; "Approve this dry SHA…" on the card, through the form and the
// confirmation, adds the approval as the person; the real gate-controller puts it in force, and
// the gate then lets exactly that dry SHA through by the promoter's own rule (gate.AllowsFor),
// and no other. The card and the gate's page say so live; Remove… takes it back.
func TestApproveThisDrySHAFromTheCardLetsExactlyItThrough(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	gateController(t)
	ns := newNamespace(t)
	ctx := context.Background()
	gates := env.Sluice.GatingV1alpha1().Gates(ns)
	_, err := gates.Create(ctx, &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "freeze"},
		Spec: gatingv1alpha1.GateSpec{Closed: true, Message: "release freeze"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	blocked := "gate " + ns + "/freeze is closed (Manual: release freeze)"
	createGatedStrategy(t, ns, "freeze", promoterv1alpha1.EnvironmentStatus{
		Active: promoterv1alpha1.CommitState{DrySHA: oldSHA, Phase: "success"}, Proposed: promoterv1alpha1.CommitState{DrySHA: newSHA, Phase: "success"},
		Blocked: blocked, Blocks: []promoterv1alpha1.PromotionBlock{{Rule: promoterv1alpha1.BlockGates, Environment: "env/prod", Message: blocked}}})
	lookup := func(gns, name string) (*gatingv1alpha1.Gate, error) { return gates.Get(ctx, name, metav1.GetOptions{}) }
	lets := func(sha string) bool {
		return gate.AllowsFor(gate.Subject{Revision: sha, Now: time.Now()}, []gate.Ref{{Namespace: ns, Name: "freeze"}}, gate.RequireAll, lookup).Allowed
	}
	testenv.WaitFor(t, time.Minute, func() (bool, error) {
		g, err := gates.Get(ctx, "freeze", metav1.GetOptions{})
		return err == nil && meta.IsStatusConditionFalse(g.Status.Conditions, gatingv1alpha1.ConditionOpen), err
	}, "the gate-controller finds the gate closed")
	require.False(t, lets(newSHA), "closed: nothing goes through yet")

	b := browser(t)
	signIn(b, t, url)
	within(b, t, chromedp.Navigate(url+"/pipelines/"+ns+"/checkout"), chromedp.WaitVisible(css(`#live.on`)),
		follow(`[data-branch="env/prod"] a[data-approve]`), chromedp.WaitVisible(css(`#f-revision`)))
	revision := read(b, t, chromedp.Evaluate[string](`document.getElementById('f-revision').value`))
	assert.Equal(t, newSHA, revision, "the dry SHA prod would promote, in full")
	within(b, t, chromedp.SendKeys(css(`#f-message`), "CHG-42 signed off"), chromedp.Click(css(`button[type=submit]`)), chromedp.WaitVisible(css(`#change`)))
	assert.Contains(t, textOf(b, t, `#change`), "Gate "+ns+"/freeze: spec.approvals gains "+newSHA, "the confirmation says exactly what changes")
	within(b, t, chromedp.Click(css(`#confirm`)), chromedp.WaitVisible(css(`.done`)))
	assert.Contains(t, read(b, t, chromedp.Evaluate[string](`location.pathname`)), "/pipelines/"+ns+"/checkout", "back on the pipeline")

	testenv.WaitFor(t, time.Minute, func() (bool, error) { return lets(newSHA), nil }, "the gate lets the approved dry SHA through")
	assert.False(t, lets(strings.Repeat("3", 40)), "and no other dry SHA")
	assert.False(t, lets(oldSHA), "not even the one running")
	g, err := gates.Get(ctx, "freeze", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, g.Spec.Approvals, 1)
	me := g.Spec.Approvals[0].By
	assert.NotEmpty(t, me, "the approval names the person")
	assert.Equal(t, "CHG-42 signed off", g.Spec.Approvals[0].Message)
	waitEventNamingMe(t, ns, "freeze", "ApprovedFromUI")
	within(b, t, chromedp.WaitVisible(css(`[data-branch="env/prod"] [data-approved]`)))
	assert.Contains(t, textOf(b, t, `[data-branch="env/prod"] [data-approved]`), "lets dry 2222222 through: approved by "+me, "the card says the gate lets it through")
	screenshot(b, t, "approved")

	within(b, t, chromedp.Navigate(url+"/gates/"+ns+"/freeze"), chromedp.WaitVisible(css(`[data-lets-through]`)))
	screenshot(b, t, "gate-approvals")
	row := textOf(b, t, `#approvals tr[data-revision="`+newSHA+`"]`)
	assert.Contains(t, row, me)
	assert.Contains(t, row, "until removed")
	within(b, t, follow(`a[data-remove-approval]`), chromedp.WaitVisible(css(`button[type=submit]`)),
		chromedp.Click(css(`button[type=submit]`)), chromedp.WaitVisible(css(`#change`)))
	assert.Contains(t, textOf(b, t, `#change`), "the approval of "+newSHA+" is removed")
	within(b, t, chromedp.Click(css(`#confirm`)), chromedp.WaitVisible(css(`.done`)))
	g, err = gates.Get(ctx, "freeze", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, g.Spec.Approvals, "removed")
	waitEventNamingMe(t, ns, "freeze", "ApprovalRemovedFromUI")
	testenv.WaitFor(t, time.Minute, func() (bool, error) { return !lets(newSHA), nil }, "held again")
}

// TestApproveThisRevisionOfAHeldKustomization: real Flux deploys env/prod; once its gate closes,
// the real gate-controller holds the Kustomization, and source-controller fetches a new commit
// that is not applied. The gate's page offers "Approve this revision…" on the Kustomization; the
// form carries the revision the GitRepository fetched, read as the person, and confirming
// approves exactly that. The gate-controller then pins the GitRepository on that commit and
// lets the Kustomization through, kustomize-controller applies it, and the environment's card
// still shows the Kustomization that deploys it, pinned or not.
func TestApproveThisRevisionOfAHeldKustomization(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	gateController(t)
	ns := newNamespace(t)
	ctx := context.Background()
	createGate(t, ns, "freeze")
	d := deployWithFlux(t, ns, map[string]string{"env/prod": "freeze"})
	createScmRepository(t, ns, d.url)
	createGatedStrategy(t, ns, "freeze", promoterv1alpha1.EnvironmentStatus{Active: promoterv1alpha1.CommitState{DrySHA: oldSHA}})

	g, err := env.Sluice.GatingV1alpha1().Gates(ns).Get(ctx, "freeze", metav1.GetOptions{})
	require.NoError(t, err)
	g.Spec.Closed, g.Spec.Message = true, "release freeze"
	_, err = env.Sluice.GatingV1alpha1().Gates(ns).Update(ctx, g, metav1.UpdateOptions{})
	require.NoError(t, err)
	waitKustomizationHeld(t, ns, fluxName("env/prod"), flux.ApplyTimeout)
	revision := flux.Revision("env/prod", d.commit("env/prod", "2"))
	flux.RequestReconcile(t, env, flux.GitRepositories, ns, fluxName("env/prod"))
	flux.WaitForFetched(t, env, ns, fluxName("env/prod"), revision)

	b := browser(t)
	signIn(b, t, url)
	within(b, t, chromedp.Navigate(url+"/gates/"+ns+"/freeze"), chromedp.WaitVisible(css(`#live.on`)),
		chromedp.WaitVisible(css(`#targets a[data-approve]`)), follow(`#targets a[data-approve]`), chromedp.WaitVisible(css(`#f-revision`)))
	assert.Equal(t, revision, read(b, t, chromedp.Evaluate[string](`document.getElementById('f-revision').value`)), "the revision its source fetched")
	within(b, t, chromedp.Click(css(`button[type=submit]`)), chromedp.WaitVisible(css(`#change`)), chromedp.Click(css(`#confirm`)), chromedp.WaitVisible(css(`.done`)))
	g, err = env.Sluice.GatingV1alpha1().Gates(ns).Get(ctx, "freeze", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, g.Spec.Approvals, 1)
	assert.Equal(t, revision, g.Spec.Approvals[0].Revision)
	waitEventNamingMe(t, ns, "freeze", "ApprovedFromUI")

	flux.WaitForApplied(t, env, ns, fluxName("env/prod"), revision)
	source, err := env.Dynamic.Resource(flux.GitRepositories).Namespace(ns).Get(ctx, fluxName("env/prod"), metav1.GetOptions{})
	require.NoError(t, err)
	commit, _, _ := unstructured.NestedString(source.Object, "spec", "ref", "commit")
	assert.Equal(t, strings.TrimPrefix(revision, "env/prod@sha1:"), commit, "the gate-controller pinned the source on the approved commit")
	card := `//li[@id="env-env-prod"]//li[@data-agent="Kustomization/` + ns + `/` + fluxName("env/prod") + `"]`
	within(b, t, chromedp.Navigate(url+"/pipelines/"+ns+"/checkout"), chromedp.WaitVisible(css(`#live.on`)),
		chromedp.WaitVisible(chromedp.Search(card+`[contains(., "`+revision+`")]`)))
}

// TestApproveThisRevisionOfAHeldHelmRelease: the gate's page offers "Approve this revision…" on
// a HelmRelease the real gate-controller holds; the form carries the chart version of the
// HelmChart helm-controller makes for it ("<namespace>-<name>"), read as the person, and once
// that is approved the gate-controller lets the HelmRelease through.
func TestApproveThisRevisionOfAHeldHelmRelease(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	gateController(t)
	ns := newNamespace(t)
	ctx := context.Background()
	const version = "6.0.1"
	charts := env.Dynamic.Resource(flux.HelmCharts).Namespace(ns)
	chart, err := charts.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": flux.HelmCharts.GroupVersion().String(), "kind": "HelmChart",
		"metadata": map[string]any{"name": ns + "-web", "namespace": ns},
		"spec":     map[string]any{"chart": "web", "interval": "10m", "sourceRef": map[string]any{"kind": "HelmRepository", "name": "charts"}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(chart.Object, map[string]any{"revision": version, "path": "p", "url": "http://x/p",
		"digest": "sha256:" + strings.Repeat("5", 64), "lastUpdateTime": metav1.Now().UTC().Format(time.RFC3339)}, "status", "artifact"))
	_, err = charts.UpdateStatus(ctx, chart, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = env.Sluice.GatingV1alpha1().Gates(ns).Create(ctx, &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "freeze"},
		Spec: gatingv1alpha1.GateSpec{Closed: true, Message: "release freeze"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	releases := env.Dynamic.Resource(flux.HelmReleases).Namespace(ns)
	_, err = releases.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": flux.HelmReleases.GroupVersion().String(), "kind": "HelmRelease",
		"metadata": map[string]any{"name": "web", "namespace": ns, "annotations": map[string]any{gate.GatesAnnotation: "freeze"}},
		"spec": map[string]any{"interval": "10m", "chart": map[string]any{"spec": map[string]any{"chart": "web",
			"sourceRef": map[string]any{"kind": "HelmRepository", "name": "charts"}}}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	held := func() (bool, error) {
		hr, err := releases.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, recorded := hr.GetAnnotations()[gate.HoldAnnotation]
		suspended, _, _ := unstructured.NestedBool(hr.Object, "spec", "suspend")
		return recorded && suspended, nil
	}
	testenv.WaitFor(t, time.Minute, held, "the gate-controller holds the HelmRelease")

	b := browser(t)
	signIn(b, t, url)
	row := `//table[@id="targets"]//tr[td[contains(., "` + ns + `/web")]]`
	within(b, t, chromedp.Navigate(url+"/gates/"+ns+"/freeze"), chromedp.WaitVisible(css(`#live.on`)),
		chromedp.WaitVisible(chromedp.Search(row+`//a[@data-approve]`)), chromedp.Click(chromedp.Search(row+`//a[@data-approve]`)),
		chromedp.WaitVisible(css(`#f-revision`)))
	assert.Equal(t, version, read(b, t, chromedp.Evaluate[string](`document.getElementById('f-revision').value`)), "the version its HelmChart fetched")
	within(b, t, chromedp.Click(css(`button[type=submit]`)), chromedp.WaitVisible(css(`#change`)), chromedp.Click(css(`#confirm`)), chromedp.WaitVisible(css(`.done`)))
	g, err := env.Sluice.GatingV1alpha1().Gates(ns).Get(ctx, "freeze", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, g.Spec.Approvals, 1)
	assert.Equal(t, version, g.Spec.Approvals[0].Revision)
	waitEventNamingMe(t, ns, "freeze", "ApprovedFromUI")
	testenv.WaitFor(t, 2*time.Minute, func() (bool, error) { h, err := held(); return !h, err }, "the gate-controller lets the approved version through")
}
