package soak

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	promoterv1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/git/gittest"
)

func TestGiteaFaultsAnswer502And504ByTurnsThenPassRequestsOn(t *testing.T) {
	g := &gitFaults{next: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })}
	srv := httptest.NewServer(g)
	defer srv.Close()
	get := func() int {
		resp, err := http.Get(srv.URL + "/api/v1/version")
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, get())
	g.failFor(time.Minute)
	got := map[int]int{}
	for i := 0; i < 4; i++ {
		got[get()]++
	}
	assert.Equal(t, map[int]int{http.StatusBadGateway: 2, http.StatusGatewayTimeout: 2}, got)
	g.failFor(0)
	assert.Equal(t, http.StatusOK, get(), "the fault ends")
	assert.EqualValues(t, 6, g.requests.Load(), "every request is counted, for the SCM calls at rest")
}

func TestManifestIsTheConfigMapFluxApplies(t *testing.T) {
	var cm corev1.ConfigMap
	require.NoError(t, yaml.Unmarshal(manifest("app-01", "abc123", "prod: 7"), &cm))
	assert.Equal(t, "ConfigMap", cm.Kind)
	assert.Equal(t, "app-01-app", cm.Name)
	assert.Equal(t, map[string]string{"dry": "abc123", "message": "prod: 7"}, cm.Data)
}

func TestOneStrategyInFourOnGiteaAndOneOnFluxNeverTheSame(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 20} {
		gitea, fluxed := 0, 0
		for i := 0; i < n; i++ {
			if onGitea(i, n) {
				gitea++
				assert.False(t, onFlux(i, n), "Flux deploys plain git strategies")
			}
			if onFlux(i, n) {
				fluxed++
			}
		}
		assert.Equal(t, max(1, n/4), gitea, "n=%d", n)
		if n >= 2 {
			assert.Equal(t, max(1, n/4), fluxed, "n=%d", n)
		}
	}
}

// A change Flux applied is a violation only once the gate has been closed for longer than the
// grace the hold takes to land, over the whole time since the last read.
func TestFollowAppliedFlagsAnApplyUnderAGateClosedPastTheGrace(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-01-app", Namespace: "soak"}, Data: map[string]string{"dry": "d1"}})
	w := &workload{ns: "soak", kube: kube, gates: map[string]*gateLog{}}
	c := &checker{w: w, checks: map[int]int{}, events: &eventLog{start: time.Now()}, reported: map[string]bool{}, context: map[string][]string{}}
	c.flux.watches = []*appliedWatch{{strategy: "app-01"}}
	apply := func(dry string) {
		_, err := kube.CoreV1().ConfigMaps("soak").Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-01-app", Namespace: "soak"}, Data: map[string]string{"dry": dry}}, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	t0 := time.Now()
	require.NoError(t, c.followApplied(ctx, t0))
	w.gateOf("app-01").close(t0)
	apply("d2")
	require.NoError(t, c.followApplied(ctx, t0.Add(fluxGrace/2)))
	_, found, _ := c.result()
	assert.Empty(t, found, "within the grace the hold may not have landed yet")
	require.NoError(t, c.followApplied(ctx, t0.Add(fluxGrace+time.Second)))
	apply("d3")
	require.NoError(t, c.followApplied(ctx, t0.Add(fluxGrace+time.Minute)))
	_, found, _ = c.result()
	require.Len(t, found, 1)
	assert.Equal(t, 6, found[0].Invariant)
}

// On Gitea, once the environment moved past -next, the hydrator's proposal has the environment
// as first parent and the last proposal as second: a fast-forward of -next that merges into the
// environment without a conflict.
func TestProposeOnEnvironmentStartsFromTheEnvironmentAndFastForwardsNext(t *testing.T) {
	ctx := context.Background()
	d0, d1, d2 := strings.Repeat("0", 40), strings.Repeat("1", 40), strings.Repeat("2", 40)
	srv := gittest.NewServer(t)
	u, err := srv.InitRepo("app")
	require.NoError(t, err)
	cache, err := git.NewCache(t.TempDir(), nil)
	require.NoError(t, err)
	repo, err := cache.Open(u, git.Auth{}, git.Options{})
	require.NoError(t, err)
	cli, err := newGitCLI(ctx, filepath.Join(t.TempDir(), "app.git"), u)
	require.NoError(t, err)
	h := &hydrator{repo: repo, strategy: "app", cli: cli}
	_, err = h.commit(ctx, "prod", d0, "prod: 0")
	require.NoError(t, err)
	require.NoError(t, h.propose(ctx, "prod", d1, "prod: 1"))
	last, err := repo.Resolve("prod-next")
	require.NoError(t, err)
	// The environment moves on its own: a revert, say.
	tip, err := h.commit(ctx, "prod", d0, "prod: revert")
	require.NoError(t, err)

	require.NoError(t, h.propose(ctx, "prod", d2, "prod: 2"))
	require.NoError(t, repo.Fetch(ctx, "prod-next"))
	head, err := repo.Resolve("prod-next")
	require.NoError(t, err)
	info, err := repo.Commit(head)
	require.NoError(t, err)
	assert.Equal(t, []string{tip, last}, info.Parents)
	dry, err := repo.DrySHA(head)
	require.NoError(t, err)
	assert.Equal(t, d2, dry.SHA)
	files, err := repo.ReadFiles(head, "", func(string) bool { return true }, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, string(manifest("app", d2, "prod: 2")), string(files["app.yaml"]))
}

func TestNotWhole(t *testing.T) {
	rl := &release{name: "rel-00"}
	whole := map[string]string{"rel-00-a": "3", "rel-00-b": "3", "rel-00-c": "3"}
	assert.Empty(t, notWhole(rl, whole))
	assert.Contains(t, notWhole(rl, map[string]string{"rel-00-a": "3", "rel-00-b": "4", "rel-00-c": "3"}), "two versions half-applied")
	assert.Contains(t, notWhole(rl, map[string]string{"rel-00-a": "3", "rel-00-c": "3"}), "rel-00-b is missing")
}

func TestReleaseManifestsNameTheForeignObjectOnlyWhenAsked(t *testing.T) {
	rl := &release{name: "rel-00"}
	plain, foreign := releaseManifests(rl, 4, false), releaseManifests(rl, 4, true)
	assert.Equal(t, 2, strings.Count(plain, "---"), "three objects")
	assert.NotContains(t, plain, "rel-00-foreign")
	assert.Contains(t, foreign, "name: rel-00-foreign")
	assert.Contains(t, releaseTests(rl, true), "kind: Job", "a failing version's test is a Job nothing completes")
	assert.NotContains(t, releaseTests(rl, false), "kind: Job")
	failing := 0
	for v := 2; v < 300; v++ {
		if releaseFailing(1, "rel-00", v) {
			failing++
		}
	}
	assert.InDelta(t, 100, failing, 30, "one version in three fails its tests")
	assert.False(t, releaseFailing(1, "rel-00", 1), "the first version installs")
}

// Invariant 4 is judged on one List: a revert that merged is not in flight, whatever it wrote,
// and one waiting its turn with nothing written is not started.
func TestStartedReverts(t *testing.T) {
	rc := func(name, env string, phase rollbackv1.RevertPhase, sha string) rollbackv1.RevertCommit {
		return rollbackv1.RevertCommit{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:   rollbackv1.RevertCommitSpec{PromotionStrategyRef: rollbackv1.PromotionStrategyReference{Name: "app"}, ActiveBranch: env},
			Status: rollbackv1.RevertCommitStatus{Phase: phase, RevertSHA: sha}}
	}
	started, envs := startedReverts([]rollbackv1.RevertCommit{
		rc("merged", "staging", rollbackv1.RevertMerged, "a"),
		rc("open", "staging", rollbackv1.RevertOpen, "b"),
		rc("waiting", "staging", rollbackv1.RevertPending, ""),
		rc("superseded", "staging", rollbackv1.RevertSuperseded, "c"),
		rc("prod-written", "prod", rollbackv1.RevertPending, "d"),
		rc("prod-open", "prod", rollbackv1.RevertOpen, "e"),
	})
	assert.Equal(t, 2, envs)
	assert.Equal(t, map[string][]string{"app/staging": {"open"}, "app/prod": {"prod-written", "prod-open"}}, started)
}

func TestStrategyDocPollsEveryTenMinutes(t *testing.T) {
	var ps promoterv1.PromotionStrategy
	require.NoError(t, yaml.Unmarshal([]byte(strategyDoc("app-00")), &ps))
	require.NotNil(t, ps.Spec.Interval)
	assert.Equal(t, 10*time.Minute, ps.Spec.Interval.Duration)
	assert.Equal(t, "app-00", ps.Spec.RepositoryRef.Name)
	require.Len(t, ps.Spec.Environments, 3)
	assert.Equal(t, "app-00-prod", ps.Spec.Environments[2].Gates.Refs[0].Name)
}

func TestOnlyTheCommitstatusControllerImportPollOutlastsTheRun(t *testing.T) {
	cfg := Config{Duration: 30 * time.Minute, ConvergeWithin: 5 * time.Minute}
	poll := importPollInterval(cfg)
	// The poll chain starts when a leader starts, at the earliest with the run; it must not fall
	// due before the rest window ends, after the workload, convergence and the statuses' wait.
	assert.Greater(t, poll, cfg.Duration+cfg.ConvergeWithin+scmStatusWait+restWindow)
	assert.Equal(t, []string{"--import-poll-interval", poll.String()}, controllerFlags("commitstatus-controller", poll))
	for _, name := range controllers {
		if name != "commitstatus-controller" {
			assert.Empty(t, controllerFlags(name, poll), name)
		}
	}
}

func TestRequestsAtRestNameOnlyThoseOfTheWindow(t *testing.T) {
	g := &gitFaults{next: http.NotFoundHandler()}
	g.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/app-16.git/git-receive-pack", nil))
	windowStart := time.Now()
	for _, sha := range []string{"aaa", "bbb"} {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/repos/sluice/app-03/commits/"+sha+"/status", nil)
		req.Header.Set("User-Agent", "sluice-commitstatus-controller")
		g.ServeHTTP(httptest.NewRecorder(), req)
	}
	in := g.lastSince(windowStart, 5)
	require.Len(t, in, 2)
	assert.Contains(t, in[0], "commits/aaa/status")
	assert.Contains(t, in[1], "commits/bbb/status? (sluice-commitstatus-controller)")
	assert.Len(t, g.lastSince(windowStart, 1), 1)
	assert.Empty(t, g.lastSince(time.Now().Add(time.Second), 5))
}

// A proposal approved through a closed gate lands with the -next commits proposed before it:
// only where prod lands is judged, and a landing nobody approved is still a violation.
func TestGatedMoveJudgesWhereProdLands(t *testing.T) {
	repo, _ := gittest.NewGitServedRepo(t, "app-01")
	hydrated := func(branch, dry string) string {
		return repo.CommitFiles(t, branch, map[string]string{"app.yaml": dry, git.DefaultMetadataFile: string(git.HydratorNote(dry))}, branch+": "+dry)
	}
	hydrated("prod", "d0")
	w := &workload{ns: "soak", gates: map[string]*gateLog{}}
	c := &checker{w: w, checks: map[int]int{}, events: &eventLog{start: time.Now()}, reported: map[string]bool{}, context: map[string][]string{}}
	bw := &branchWatch{strategy: "app-01", env: "prod", reader: newBranchReader(repo.Dir)}
	t0 := time.Now()
	w.gateOf("app-01").close(t0)
	require.NoError(t, c.follow(bw, t0.Add(gateGrace+time.Second)))

	repo.SetBranch(t, "prod-next", repo.Ref(t, "refs/heads/prod"))
	hydrated("prod-next", "d1")
	hydrated("prod-next", "d2")
	w.gateOf("app-01").approve("d3")
	repo.SetBranch(t, "prod", hydrated("prod-next", "d3"))
	require.NoError(t, c.follow(bw, t0.Add(gateGrace+time.Minute)))
	_, found, _ := c.result()
	assert.Empty(t, found, "d1 and d2 came in with the approved d3; prod never ran them")

	repo.SetBranch(t, "prod", hydrated("prod-next", "d4"))
	require.NoError(t, c.follow(bw, t0.Add(gateGrace+2*time.Minute)))
	_, found, _ = c.result()
	require.Len(t, found, 1, "d4 was never approved")
	assert.Equal(t, 6, found[0].Invariant)
	assert.Contains(t, found[0].What, "dry d4")
}
