package suite

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// healthTimeout is how long a release's pods may stay not Ready before it is called failed: the
// HealthChecks' spec.timeout, and the floor's wait before it reverts.
const healthTimeout = 20 * time.Second

var (
	goodRelease = map[string]string{"dev": "1.1.0", "staging": "1.1.0", "prod": "1.1.0"}
	// badRelease changes only prod's rendering (a prod-only setting, say): dev and staging stay
	// healthy, so it reaches prod, where its pods fail readiness.
	badRelease = map[string]string{"dev": "1.1.0", "staging": "1.1.0", "prod": "1.2.0-bad"}
)

// loopTimes is what one run of the loop measured.
type loopTimes struct {
	// promote: the dry commit pushed until prod's pods all run the new version, Ready.
	promote time.Duration
	// verdict: the bad release's pod first seen not Ready until the failure is called.
	verdict time.Duration
	// restore: the failure called until prod's pods all run the previous version, Ready, again.
	restore time.Duration
}

// The whole loop on the real node with running pods: real source-controller and
// kustomize-controller run as pods in flux-system and deploy the e2e-web app from dev, staging
// and prod branches on the Gitea pod, each by its own GitRepository and Kustomization with a
// one-hour interval. With Sluice's charts installed, a dry commit is promoted dev -> staging ->
// prod through pull requests on Gitea, each merge applied by Flux at once (the promoter's
// requestedAt), each environment's health (a HealthCheck of its Kustomization) gating the next;
// then a release that is bad in prod fails readiness there, its health fails, the RollbackPolicy
// reverts prod in git, Flux (woken by the rollback-controller's requestedAt) rolls the
// Deployment back, and the previous version's pods are Ready again. Before Sluice is installed,
// the same steps are driven directly through Gitea's API and requestedAt: the floor, measured in
// the same run.
func TestFluxDeliversPromotionsAndRollsBackABadRelease(t *testing.T) {
	c := cluster
	c.fluxCRDs(t)
	c.fluxControllers(t)
	server := c.giteaPod(t, c.namespace(t, "e2e-flux-git"))
	var floor, sluice loopTimes
	floorRan := t.Run("floor: the same steps through Gitea's API and requestedAt, no Sluice installed", func(t *testing.T) {
		floor = c.floorLoop(t, server)
	})
	sluiceRan := t.Run("Sluice promotes dev -> staging -> prod and rolls prod back, Flux applying each merge", func(t *testing.T) {
		sluice = c.sluiceLoop(t, server)
	})
	t.Logf("floor: %s; Sluice: %s", floor, sluice)
	if floorRan && sluiceRan {
		figures.add("Flux pods: dry commit to prod's pods running it, Sluice (3 PRs, health-gated)", sluice.promote)
		figures.add("  floor: the test opens and merges the 3 PRs on Gitea and sets requestedAt", floor.promote)
		figures.add("Flux pods: bad pod seen not Ready to prod's failing health check (20s timeout)", sluice.verdict)
		figures.add("Flux pods: time to restore, failing check to the old version's pods Ready, Sluice", sluice.restore)
		figures.add("  floor: the test pushes the revert, opens and merges it, sets requestedAt", floor.restore)
	}
}

// floorLoop drives the loop as a script on Gitea's API would, with no Sluice controller
// installed: it opens and merges each environment's pull request, sets requestedAt on the
// environment's GitRepository, and waits for its pods before the next; once the bad release's
// pod has stayed not Ready for healthTimeout, it pushes a revert of prod, opens and merges it.
func (c *Cluster) floorLoop(t *testing.T, server gitServer) loopTimes {
	a := c.newWebApp(t, c.namespace(t, "e2e-flux-floor"), server, "web-floor")
	var times loopTimes
	start := time.Now()
	a.propose(t, "web 1.1.0", goodRelease)
	a.promoteByAPI(t, goodRelease, environments...)
	times.promote = time.Since(start)
	good := a.dry["prod-next"]

	a.propose(t, "prod: web 1.2.0-bad", badRelease)
	neverReady := a.neverReady(t, "prod", badRelease["prod"])
	a.promoteByAPI(t, badRelease, "dev", "staging")
	a.openAndMerge(t, "prod-next", "prod")
	a.wake(t, "prod")
	seen := a.waitBadPodNotReady(t, "prod", badRelease["prod"])
	// The floor's verdict is the HealthCheck's: the release still not Ready healthTimeout after
	// its pod was seen.
	for deadline := seen.Add(healthTimeout); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		recovered, err := a.runs("prod", goodRelease["prod"])
		require.NoError(t, err)
		require.False(t, recovered, "prod recovered by itself")
	}
	verdict := time.Now()
	times.verdict = verdict.Sub(seen)
	a.hydrate(t, "prod", "prod-revert", good, goodRelease["prod"])
	a.openAndMerge(t, "prod-revert", "prod")
	a.wake(t, "prod")
	times.restore = a.waitRuns(t, "prod", goodRelease["prod"]).Sub(verdict)
	assert.True(t, neverReady(), "no pod of the bad release was ever Ready")
	return times
}

// promoteByAPI promotes each environment in turn, as the floor: open and merge, requestedAt, and
// the environment's pods running its version of release before the next.
func (a *webApp) promoteByAPI(t *testing.T, release map[string]string, envs ...string) {
	t.Helper()
	for _, env := range envs {
		a.openAndMerge(t, env+"-next", env)
		a.wake(t, env)
		a.waitRuns(t, env, release[env])
	}
}

// waitBadPodNotReady waits until a pod of env runs version and is not Ready, and returns when it
// saw it.
func (a *webApp) waitBadPodNotReady(t *testing.T, env, version string) time.Time {
	t.Helper()
	testenv.WaitFor(t, 4*time.Minute, func() (bool, error) {
		pods, err := a.pods(env)
		for _, p := range pods {
			if podVersion(p) == version && !podReady(&p) && p.Status.Phase == "Running" {
				return true, nil
			}
		}
		return false, err
	}, "a pod of %s runs %s and fails readiness (pods: %s)\n%s", env, version,
		lazy(func() string { return a.describePods(env) }), lazy(func() string { return a.fluxState(env) }))
	return time.Now()
}

// neverReady watches env's pods until the returned function is called (or the test ends), which
// reports whether no pod running version was Ready meanwhile.
func (a *webApp) neverReady(t *testing.T, env, version string) func() bool {
	done, result := make(chan struct{}), make(chan bool, 1)
	var once sync.Once
	var never bool
	stop := func() bool {
		once.Do(func() { close(done); never = <-result })
		return never
	}
	t.Cleanup(func() { stop() })
	go func() {
		ready := false
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			pods, _ := a.pods(env)
			for _, p := range pods {
				ready = ready || (podVersion(p) == version && podReady(&p))
			}
			select {
			case <-done:
				result <- !ready
				return
			case <-tick.C:
			}
		}
	}()
	return stop
}

// sluiceLoop installs the sluice chart, sets up the delivery pipeline of a second copy of the app,
// and runs the story through the controllers.
func (c *Cluster) sluiceLoop(t *testing.T, server gitServer) loopTimes {
	ctx := context.Background()
	require.NoError(t, c.Helm.DependencyBuild(ctx, c.chart("sluice")))
	sys := c.namespace(t, "e2e-flux-sluice")
	// The controllers read Secrets only in the namespaces listed, which must exist first.
	ns := c.namespace(t, "e2e-flux")
	const rel = "sluice-flux"
	c.helmWait(t, append([]string{"install", rel, c.chart("sluice"), "--namespace", sys}, setFlags(c.fluxLoopValues(ns))...)...)
	var crds []string
	for _, name := range controllers {
		crds = append(crds, c.chartCRDs(t, name)...)
	}
	t.Cleanup(func() {
		_, err := c.Helm.Run(context.Background(), "uninstall", rel, "--namespace", sys, "--wait")
		assert.NoError(t, err)
		c.deleteCRDs(t, crds)
	})
	a := c.newWebApp(t, ns, server, "web-deploy")
	p := c.deliveryPipeline(t, a, sys, rel)

	var times loopTimes
	start := time.Now()
	d1 := a.propose(t, "web 1.1.0", goodRelease)
	a.waitRuns(t, "prod", goodRelease["prod"])
	times.promote = time.Since(start)
	c.assertPromoted(t, a, p, d1)

	d2 := a.propose(t, "prod: web 1.2.0-bad", badRelease)
	neverReady := a.neverReady(t, "prod", badRelease["prod"])
	seen := a.waitBadPodNotReady(t, "prod", badRelease["prod"])
	var check *healthv1alpha1.HealthCheck
	testenv.WaitFor(t, 2*time.Minute, func() (bool, error) {
		var err error
		check, err = c.Sluice.HealthV1alpha1().HealthChecks(ns).Get(ctx, "web-prod", metav1.GetOptions{})
		return err == nil && check.Status.CommitStatus != nil && check.Status.CommitStatus.Phase == "failure", err
	}, "prod's health check fails on the bad release\n%s", lazy(func() string { return c.controllerLogs("health-controller") }))
	failing := time.Now()
	times.verdict = failing.Sub(seen)
	restored := a.waitRuns(t, "prod", goodRelease["prod"])
	times.restore = restored.Sub(failing)
	assert.True(t, neverReady(), "no pod of the bad release was ever Ready")
	c.assertRolledBack(t, a, p, d1, d2)
	return times
}

// fluxLoopValues run the five controllers from the imported images, the promoter with its
// webhook receiver, the controllers that read Secrets allowed to in secretNamespace only.
func (c *Cluster) fluxLoopValues(secretNamespace string) []string {
	set := []string{"global.imageTag=" + c.Images.Version, "promoter-controller.webhook.enabled=true"}
	for _, name := range controllers {
		set = append(set, name+".image.pullPolicy=Never")
	}
	for _, name := range []string{"commitstatus-controller", "promoter-controller", "rollback-controller"} {
		set = append(set, name+".secretAccess.namespaces={"+secretNamespace+"}")
	}
	return set
}

// assertPromoted checks what a user sees after the good release: every environment's pods run
// it and answer with it, each environment merged one pull request on Gitea, in order, and each
// GitRepository was asked to fetch by the promoter.
func (c *Cluster) assertPromoted(t *testing.T, a *webApp, p *promotion, dry string) {
	t.Helper()
	for _, env := range environments {
		ok, err := a.runs(env, goodRelease[env])
		require.NoError(t, err)
		assert.True(t, ok, "%s runs %s: %s", env, goodRelease[env], a.describePods(env))
		st := p.waitEnvironment(t, env, "runs "+dry[:7], func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Active.DrySHA == dry })
		assert.NotEmpty(t, st.History, "%s records the promotion", env)
		assert.True(t, managedBy(t, a, env, "promoter-controller"), "the promoter asked GitRepository web-%s to fetch", env)
	}
	p.requirePulls(t, 1, true)
	merged := a.mergeTimes(t)
	assert.True(t, merged["dev"].Before(merged["staging"]) && merged["staging"].Before(merged["prod"]),
		"Gitea merged dev, then staging, then prod: %v", merged)
	for _, pod := range mustPods(t, a, "prod") {
		got, err := versionServed(pod)
		require.NoError(t, err)
		assert.Equal(t, "e2e-web "+goodRelease["prod"], got, "pod %s answers with its version", pod.Name)
	}
}

// assertRolledBack checks what a user sees after the rollback: one RevertCommit, merged, from
// the bad dry commit back to the good one; on Gitea its pull request merged into prod; in git,
// prod's history holds the revert and its tip renders the good version; the rollback-controller
// asked prod's GitRepository to fetch; prod's health passes again; the pods answer with the good
// version.
func (c *Cluster) assertRolledBack(t *testing.T, a *webApp, p *promotion, good, bad string) {
	t.Helper()
	ctx := context.Background()
	rcs, err := c.Sluice.RollbackV1alpha1().RevertCommits(a.ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, rcs.Items, 1, "one revert")
	rc := rcs.Items[0]
	assert.Equal(t, rollbackv1alpha1.RevertMerged, rc.Status.Phase)
	assert.Equal(t, "prod", rc.Spec.ActiveBranch)
	assert.Equal(t, bad, rc.Status.BadDrySHA)
	assert.Equal(t, good, rc.Status.TargetDrySHA)
	var revertPR bool
	for _, pr := range p.pulls(t) {
		revertPR = revertPR || (pr.Merged && pr.Base.Ref == "prod" && pr.Head.Ref == rc.Status.RevertBranch)
	}
	assert.True(t, revertPR, "Gitea shows the revert's pull request %s -> prod merged", rc.Status.RevertBranch)

	require.NoError(t, a.repo.Fetch(ctx, "prod"))
	log, err := a.repo.Log("prod", 10)
	require.NoError(t, err)
	var reverted bool
	for _, commit := range log {
		reverted = reverted || strings.Contains(commit.Message, rollbackv1alpha1.TrailerRevertedDrySHA+": "+bad)
	}
	assert.True(t, reverted, "prod's history holds the revert of %s", bad[:7])
	tip, err := a.repo.Resolve("prod")
	require.NoError(t, err)
	files, err := a.repo.ReadFiles(tip, "deploy", func(string) bool { return true }, 1<<20)
	require.NoError(t, err)
	assert.Contains(t, string(files["web.yaml"]), "--version="+goodRelease["prod"], "prod's tip renders the good version")
	assert.True(t, managedBy(t, a, "prod", "rollback-controller"), "the rollback-controller asked GitRepository web-prod to fetch")

	testenv.WaitForObject(t, 2*time.Minute, c.Sluice.HealthV1alpha1().HealthChecks(a.ns), "web-prod", func(h *healthv1alpha1.HealthCheck) bool {
		return h.Status.Healthy && h.Status.CommitStatus != nil && h.Status.CommitStatus.Phase == "success"
	})
	for _, pod := range mustPods(t, a, "prod") {
		got, err := versionServed(pod)
		require.NoError(t, err)
		assert.Equal(t, "e2e-web "+goodRelease["prod"], got, "pod %s answers with the previous version", pod.Name)
	}
}

// mergeTimes is when Gitea merged each environment's promotion pull request (<env>-next into
// <env>), the latest per environment.
func (a *webApp) mergeTimes(t *testing.T) map[string]time.Time {
	t.Helper()
	var prs []struct {
		Merged   bool                 `json:"merged"`
		MergedAt time.Time            `json:"merged_at"`
		Base     struct{ Ref string } `json:"base"`
		Head     struct{ Ref string } `json:"head"`
	}
	require.NoError(t, a.srv.API(context.Background(), "GET", "/repos/"+a.srv.AdminUser+"/"+a.name+"/pulls?state=all&limit=50", nil, &prs))
	out := map[string]time.Time{}
	for _, pr := range prs {
		if pr.Merged && pr.Head.Ref == pr.Base.Ref+"-next" && pr.MergedAt.After(out[pr.Base.Ref]) {
			out[pr.Base.Ref] = pr.MergedAt
		}
	}
	return out
}

func mustPods(t *testing.T, a *webApp, env string) []corev1.Pod {
	t.Helper()
	pods, err := a.pods(env)
	require.NoError(t, err)
	require.Len(t, pods, webReplicas)
	return pods
}

// managedBy reports whether manager set requestedAt on env's GitRepository, as its
// managedFields record.
func managedBy(t *testing.T, a *webApp, env, manager string) bool {
	t.Helper()
	obj, err := a.c.Dynamic.Resource(flux.GitRepositories).Namespace(a.ns).Get(context.Background(), "web-"+env, metav1.GetOptions{})
	require.NoError(t, err)
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == manager && mf.FieldsV1 != nil && strings.Contains(string(mf.FieldsV1.Raw), "reconcile.fluxcd.io/requestedAt") {
			return true
		}
	}
	return false
}

// String formats a run's figures for a log line.
func (l loopTimes) String() string {
	return fmt.Sprintf("promote %s, verdict %s, restore %s", l.promote.Round(10*time.Millisecond),
		l.verdict.Round(10*time.Millisecond), l.restore.Round(10*time.Millisecond))
}
