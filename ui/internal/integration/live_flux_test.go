package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/testenv/flux"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// TestAGatePageRefreshesOnlyForTheObjectsThatNameItsGate: an open gate page is not fetched again
// when real kustomize-controller applies a new revision to a Kustomization that names another
// gate, and is when one that names its gate changes; one that stops naming the gate leaves the
// page live.
func TestAGatePageRefreshesOnlyForTheObjectsThatNameItsGate(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	ns := newNamespace(t)
	createGate(t, ns, "freeze")
	createGate(t, ns, "other")
	d := deployWithFlux(t, ns, map[string]string{"apps": "freeze", "unrelated": "other"})

	b := browser(t)
	signIn(b, t, url)
	row := `//table[@id="targets"]//tr[td[contains(., "` + ns + `/apps")]]`
	within(b, t, chromedp.Navigate(url+"/gates/"+ns+"/freeze"), chromedp.WaitVisible(css(`#live.on`)), chromedp.WaitVisible(chromedp.Search(row)))
	watch := strings.Split(read(b, t, chromedp.Evaluate[string](`document.getElementById('main').getAttribute('data-watch')`)), ",")
	assert.Contains(t, watch, "GateTargets/"+ns+"/freeze", "the page names the objects of its gate")
	assert.NotContains(t, watch, "Kustomization", "and not every Kustomization")
	flush := followMarker(b, t, ns)
	before := updates(b, t)

	d.push("unrelated", "2")
	flush()
	suspendKustomization(t, ns, "apps", "paused for the audit")
	within(b, t, chromedp.WaitVisible(chromedp.Search(row+`[contains(., "paused for the audit")]`)))
	assert.Equal(t, before+1, updates(b, t), "one refresh, for the Kustomization that names the gate; none for Flux's writes to the other")

	_, err := env.Dynamic.Resource(flux.Kustomizations).Namespace(ns).Patch(context.Background(), "apps", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"gating.sluice.dev/gates":"other"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	read(b, t, chromedp.Poll[bool](`!document.getElementById('targets') || !document.getElementById('targets').textContent.includes('`+ns+`/apps')`))
	assert.Equal(t, before+2, updates(b, t), "the Kustomization that stopped naming the gate refreshed its page once")
}

// TestAPipelinePageRefreshesOnlyForTheAgentsOfItsBranches: an open pipeline page is not fetched
// again when real kustomize-controller applies a new revision of another branch of the
// repository, and is when the Kustomization that deploys its environment changes or applies a
// new revision.
func TestAPipelinePageRefreshesOnlyForTheAgentsOfItsBranches(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	ns := newNamespace(t)
	d := deployWithFlux(t, ns, map[string]string{"env/dev": "", "env/prod": ""})
	createScmRepository(t, ns, d.url)
	createStrategy(t, ns, promoterv1alpha1.EnvironmentStatus{Branch: "env/dev", Active: promoterv1alpha1.CommitState{DrySHA: oldSHA}})

	b := browser(t)
	signIn(b, t, url)
	card := `//li[@id="env-env-dev"]//li[@data-agent="Kustomization/` + ns + `/` + fluxName("env/dev") + `"]`
	within(b, t, chromedp.Navigate(url+"/pipelines/"+ns+"/checkout"), chromedp.WaitVisible(css(`#live.on`)),
		chromedp.WaitVisible(chromedp.Search(card+`[contains(., "`+d.applied["env/dev"]+`")]`)))
	watch := strings.Split(read(b, t, chromedp.Evaluate[string](`document.getElementById('main').getAttribute('data-watch')`)), ",")
	assert.NotContains(t, watch, "Kustomization", "the page names the agents of its branches, not every Kustomization")
	flush := followMarker(b, t, ns)
	before := updates(b, t)

	d.push("env/prod", "2")
	flush()
	suspendKustomization(t, ns, fluxName("env/dev"), "paused for the audit")
	within(b, t, chromedp.WaitVisible(chromedp.Search(card+`[contains(., "paused for the audit")]`)))
	assert.Equal(t, before+1, updates(b, t), "one refresh, for the Kustomization that deploys env/dev; none for Flux's writes to env/prod's")

	applied := d.push("env/dev", "3")
	within(b, t, chromedp.WaitVisible(chromedp.Search(card+`[contains(., "`+applied+`")]`)))
}

// fluxDeployment is a served repository whose branches real Flux deploys, through one
// GitRepository and one Kustomization each (named by fluxName). Flux polls hourly, so between
// pushes it writes nothing.
type fluxDeployment struct {
	t    *testing.T
	ns   string
	repo *gittest.Repo
	url  string
	// applied is the revision each branch was first deployed at, as Flux reports it.
	applied map[string]string
}

// deployWithFlux starts real source-controller and kustomize-controller for ns and deploys each
// branch of a new repository, its Kustomization naming the gate given, if any.
func deployWithFlux(t *testing.T, ns string, gates map[string]string) *fluxDeployment {
	t.Helper()
	repo, url := gittest.NewGitServedRepo(t, "deploy")
	flux.Start(t, env, flux.Options{Namespace: ns})
	d := &fluxDeployment{t: t, ns: ns, repo: repo, url: url, applied: map[string]string{}}
	for branch, gate := range gates {
		sha := d.commit(branch, "1")
		var annotations map[string]string
		if gate != "" {
			annotations = map[string]string{"gating.sluice.dev/gates": gate}
		}
		name := fluxName(branch)
		flux.CreateGitRepository(t, env, ns, name, flux.GitRepositorySpec{URL: url, Branch: branch, Interval: time.Hour})
		flux.CreateKustomization(t, env, ns, name, flux.KustomizationSpec{GitRepository: name, TargetNamespace: ns, Interval: time.Hour, Annotations: annotations})
		d.applied[branch] = flux.Revision(branch, sha)
	}
	for branch, revision := range d.applied {
		flux.WaitForApplied(t, env, ns, fluxName(branch), revision)
	}
	return d
}

// push commits version to branch, asks source-controller to fetch it at once (as `flux reconcile
// source git` does), and returns the revision once kustomize-controller has applied it.
func (d *fluxDeployment) push(branch, version string) string {
	d.t.Helper()
	revision := flux.Revision(branch, d.commit(branch, version))
	flux.RequestReconcile(d.t, env, flux.GitRepositories, d.ns, fluxName(branch))
	flux.WaitForApplied(d.t, env, d.ns, fluxName(branch), revision)
	return revision
}

func (d *fluxDeployment) commit(branch, version string) string {
	d.t.Helper()
	manifest := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  version: %q\n", fluxName(branch), version)
	return d.repo.CommitFiles(d.t, branch, map[string]string{"configmap.yaml": manifest}, fluxName(branch)+" "+version)
}

// fluxName is the name of the GitRepository and Kustomization that deploy branch.
func fluxName(branch string) string { return strings.ReplaceAll(branch, "/", "-") }

// followMarker opens, in the page, a second stream that counts in window.seen the changes of a
// Kustomization no page shows and Flux leaves alone (suspended). The flush it returns changes
// that Kustomization and waits until the stream was told: the UI handles one kind's changes in
// order, so every change of a Kustomization made before, such as Flux's status writes, has been
// handled, and told to the pages it concerns, by then.
func followMarker(b context.Context, t *testing.T, ns string) (flush func()) {
	t.Helper()
	marker := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": flux.Kustomizations.GroupVersion().String(), "kind": "Kustomization",
		"metadata": map[string]any{"name": "marker", "namespace": ns},
		"spec":     map[string]any{"suspend": true, "interval": "1h", "prune": true, "sourceRef": map[string]any{"kind": "GitRepository", "name": "marker"}},
	}}
	_, err := env.Dynamic.Resource(flux.Kustomizations).Namespace(ns).Create(context.Background(), marker, metav1.CreateOptions{})
	require.NoError(t, err)
	read(b, t, chromedp.Evaluate[bool](`window.seen = 0; window.other = new EventSource('/events?watch=Kustomization/`+ns+`/marker');
		other.addEventListener('change', function () { seen++; }); true`))
	read(b, t, chromedp.Poll[bool](`other.readyState === 1`))
	flushes := 0
	return func() {
		t.Helper()
		flushes++
		suspendKustomization(t, ns, "marker", "flush "+strconv.Itoa(flushes))
		read(b, t, chromedp.Poll[bool](`seen >= `+strconv.Itoa(flushes)))
	}
}

// updates is how many times the open page swapped its <main> live.
func updates(b context.Context, t *testing.T) int {
	t.Helper()
	n, _ := strconv.Atoi(read(b, t, chromedp.Evaluate[string](`document.getElementById('main').getAttribute('data-updates') || '0'`)))
	return n
}

// suspendKustomization sets the suspend annotation on a Kustomization, as a person suspending it does.
func suspendKustomization(t *testing.T, ns, name, reason string) {
	t.Helper()
	_, err := env.Dynamic.Resource(flux.Kustomizations).Namespace(ns).Patch(context.Background(), name, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"reconcile.fluxcd.io/suspended":"`+reason+`"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
}
