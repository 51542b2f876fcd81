package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/testenv"
)

// fixture is a namespace with a git repository served over HTTP by the test, a plain git
// ScmProvider and ScmRepository, and a PromotionStrategy "app" over it.
type fixture struct {
	t    *testing.T
	ns   string
	srv  *gittest.Server
	repo *gittest.Repo
	ctx  context.Context
	// shard, when set, labels the strategy shard=<shard> and runs the promoter with that selector.
	shard string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	testenv.SkipIfShort(t)
	f := &fixture{t: t, ctx: context.Background(), ns: fmt.Sprintf("rb-%d", time.Now().UnixNano())}
	_, err := env.Kube.CoreV1().Namespaces().Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	f.srv = gittest.NewServer(t)
	f.repo = f.srv.CreateRepo(t, "app")
	_, err = env.Sluice.ScmV1alpha1().ScmProviders(f.ns).Create(f.ctx, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "git"}, Spec: scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGit},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Sluice.ScmV1alpha1().ScmRepositories(f.ns).Create(f.ctx, &scmv1alpha1.ScmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: scmv1alpha1.ScmRepositorySpec{URL: f.srv.URL("app"), AllowInsecureLoopbackHTTP: true,
			ProviderRef: scmv1alpha1.LocalObjectReference{Name: "git"}, Owner: "acme", Name: "app"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return f
}

// dryCommit adds a commit to the dry branch.
func (f *fixture) dryCommit(msg string) string {
	return f.repo.CommitFiles(f.t, "main", map[string]string{"values.yaml": "msg: " + msg + "\n"}, msg)
}

// bootstrap puts every environment branch on a first dry commit and returns it.
func (f *fixture) bootstrap(envs ...string) string {
	d0 := f.dryCommit("initial")
	for _, e := range envs {
		f.repo.CommitFiles(f.t, e, map[string]string{
			"hydrator.metadata": string(hydratorNote(d0)), "manifest.yaml": "env: " + e + "\nimage: web:0\n",
		}, "initial "+e)
	}
	return d0
}

func hydratorNote(dry string) []byte { return []byte(fmt.Sprintf(`{"drySha":%q}`, dry)) }

// hydrate renders dry onto <env>-next on top of <env>, as a hydrator does (manifests, metadata
// file and note), and asks the strategy for a refresh as a hydrator's CI would.
func (f *fixture) hydrate(dry, image string, envs ...string) map[string]string {
	out := map[string]string{}
	for _, e := range envs {
		if tip := f.repo.Branch(f.t, e); tip != "" {
			f.repo.SetBranch(f.t, e+"-next", tip)
		}
		files := map[string]string{"hydrator.metadata": string(hydratorNote(dry)), "manifest.yaml": "env: " + e + "\nimage: " + image + "\n"}
		sha := f.repo.CommitFiles(f.t, e+"-next", files, "hydrate "+dry[:7])
		f.repo.AddNote(f.t, "refs/notes/hydrator.metadata", sha, string(hydratorNote(dry)))
		out[e] = sha
	}
	if _, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Get(f.ctx, "app", metav1.GetOptions{}); err == nil {
		f.refresh("hydrated " + dry)
	}
	return out
}

// strategy creates PromotionStrategy "app" with a health check on every environment.
func (f *fixture) strategy(envs ...string) *promoterv1alpha1.PromotionStrategy {
	ps := &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: f.shardLabels()},
		Spec: promoterv1alpha1.PromotionStrategySpec{
			RepositoryRef:        promoterv1alpha1.LocalReference{Name: "app"},
			DryBranch:            "main",
			ActiveCommitStatuses: []promoterv1alpha1.CommitStatusSelector{{Key: "health"}},
		},
	}
	for _, e := range envs {
		ps.Spec.Environments = append(ps.Spec.Environments, promoterv1alpha1.Environment{Branch: e})
	}
	created, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Create(f.ctx, ps, metav1.CreateOptions{})
	require.NoError(f.t, err)
	return created
}

func (f *fixture) shardLabels() map[string]string {
	if f.shard == "" {
		return nil
	}
	return map[string]string{"shard": f.shard}
}

// promoterFlags shard the promoter as the fixture is.
func (f *fixture) promoterFlags() []string {
	if f.shard == "" {
		return nil
	}
	return []string{"--watch-label-selector", "shard=" + f.shard}
}

// refresh asks the promoter to fetch and re-evaluate now, and waits until it did.
func (f *fixture) refresh(value string) {
	f.t.Helper()
	value = fmt.Sprintf("%s %d", value, time.Now().UnixNano())
	_, err := testenv.Update(f.ctx, env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns), "app", func(ps *promoterv1alpha1.PromotionStrategy) {
		metav1.SetMetaDataAnnotation(&ps.ObjectMeta, promoterv1alpha1.RefreshAnnotation, value)
	})
	require.NoError(f.t, err)
	require.NoError(f.t, testenv.Wait(f.ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Get(ctx, "app", metav1.GetOptions{})
		return err == nil && ps.Status.LastHandledRefresh == value, err
	}))
}

// setStatus writes the CommitStatus of key on sha, as the health-controller would.
func (f *fixture) setStatus(key, sha string, phase commitstatusv1alpha1.CommitStatusPhase, description string) {
	f.t.Helper()
	name := key + "-" + sha[:10]
	_, err := testenv.Update(f.ctx, env.Sluice.CommitstatusV1alpha1().CommitStatuses(f.ns), name, func(cs *commitstatusv1alpha1.CommitStatus) {
		cs.Spec.Phase, cs.Spec.Description = phase, description
	})
	if err == nil {
		return
	}
	_, err = env.Sluice.CommitstatusV1alpha1().CommitStatuses(f.ns).Create(f.ctx, &commitstatusv1alpha1.CommitStatus{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{commitstatusv1alpha1.KeyLabel: key}},
		Spec: commitstatusv1alpha1.CommitStatusSpec{RepositoryRef: commitstatusv1alpha1.RepositoryReference{Name: "app"},
			SHA: sha, Name: key, Phase: phase, Description: description},
	}, metav1.CreateOptions{})
	require.NoError(f.t, err)
}

// waitEnv waits until cond holds for environment branch and returns its status.
func (f *fixture) waitEnv(branch, what string, cond func(promoterv1alpha1.EnvironmentStatus) bool) promoterv1alpha1.EnvironmentStatus {
	f.t.Helper()
	last, err := testenv.WaitEnvironment(f.ctx, 60*time.Second, env.Sluice, f.ns, "app", branch, cond)
	require.NoError(f.t, err, "%s: %s; last status %+v", branch, what, last)
	return last
}

func healthyOn(dry string) func(promoterv1alpha1.EnvironmentStatus) bool {
	return func(e promoterv1alpha1.EnvironmentStatus) bool {
		return len(e.LastHealthyDrySHAs) > 0 && e.LastHealthyDrySHAs[0].SHA == dry
	}
}

// promote hydrates dry into env, waits for the promotion and for its health status, and
// returns the environment's status.
func (f *fixture) promote(branch, dry, image string, health commitstatusv1alpha1.CommitStatusPhase) promoterv1alpha1.EnvironmentStatus {
	f.t.Helper()
	f.hydrate(dry, image, branch)
	st := f.waitEnv(branch, "promoted to "+dry[:7], testenv.PromotedTo(dry))
	f.setStatus("health", st.Active.HydratedSHA, health, "health of "+image)
	if health == commitstatusv1alpha1.CommitStatusSuccess {
		return f.waitEnv(branch, "healthy on "+dry[:7], healthyOn(dry))
	}
	return st
}

// revert creates a RevertCommit of environment env.
func (f *fixture) revert(name, branch string, mutate func(*rollbackv1alpha1.RevertCommitSpec)) {
	f.t.Helper()
	rc := &rollbackv1alpha1.RevertCommit{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: rollbackv1alpha1.RevertCommitSpec{
			PromotionStrategyRef: rollbackv1alpha1.PromotionStrategyReference{Name: "app"}, ActiveBranch: branch,
		},
	}
	if mutate != nil {
		mutate(&rc.Spec)
	}
	_, err := env.Sluice.RollbackV1alpha1().RevertCommits(f.ns).Create(f.ctx, rc, metav1.CreateOptions{})
	require.NoError(f.t, err)
}

// waitRevert waits until cond holds for RevertCommit name and returns it.
func (f *fixture) waitRevert(name, what string, cond func(*rollbackv1alpha1.RevertCommit) bool) *rollbackv1alpha1.RevertCommit {
	f.t.Helper()
	var last *rollbackv1alpha1.RevertCommit
	err := testenv.Wait(f.ctx, 90*time.Second, func(ctx context.Context) (bool, error) {
		rc, err := env.Sluice.RollbackV1alpha1().RevertCommits(f.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = rc
		return cond(rc), nil
	})
	require.NoError(f.t, err, "RevertCommit %s: %s; last status %+v", name, what, statusOf(last))
	return last
}

func statusOf(rc *rollbackv1alpha1.RevertCommit) any {
	if rc == nil {
		return nil
	}
	return rc.Status
}

func inPhase(phase rollbackv1alpha1.RevertPhase) func(*rollbackv1alpha1.RevertCommit) bool {
	return func(rc *rollbackv1alpha1.RevertCommit) bool { return rc.Status.Phase == phase }
}

func stalledWith(reason string) func(*rollbackv1alpha1.RevertCommit) bool {
	return func(rc *rollbackv1alpha1.RevertCommit) bool {
		c := conditions.Get(rc.Status.Conditions, conditions.Stalled)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason
	}
}

func (f *fixture) events(reason string) []corev1.Event {
	list, err := env.Kube.CoreV1().Events(f.ns).List(f.ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
	require.NoError(f.t, err)
	return list.Items
}

func (f *fixture) pullRequests() []promoterv1alpha1.PullRequest {
	list, err := env.Sluice.PromoterV1alpha1().PullRequests(f.ns).List(f.ctx, metav1.ListOptions{})
	require.NoError(f.t, err)
	return list.Items
}

// revertCommitsIn counts the commits reachable from branch that carry the marker of
// RevertCommit uid: more than one is a second revert.
func (f *fixture) revertCommitsIn(branch, uid string) int {
	f.t.Helper()
	n := 0
	seen := map[string]bool{}
	queue := []string{f.repo.Branch(f.t, branch)}
	for len(queue) > 0 {
		sha := queue[0]
		queue = queue[1:]
		if sha == "" || seen[sha] {
			continue
		}
		seen[sha] = true
		c := f.repo.ReadCommit(f.t, sha)
		if strings.Contains(c.Message, rollbackv1alpha1.TrailerRevertCommitUID+": "+uid+"\n") {
			n++
		}
		for _, p := range c.ParentHashes {
			queue = append(queue, p.String())
		}
	}
	return n
}
