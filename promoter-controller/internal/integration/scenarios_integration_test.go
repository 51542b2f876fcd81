package integration

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/promoter-controller/internal/promotionstrategy"
	"github.com/sluicehq/sluice/testenv"
)

func oneEnv(s *promoterv1alpha1.PromotionStrategySpec) {
	s.ActiveCommitStatuses = nil
	s.Environments = []promoterv1alpha1.Environment{{Branch: "dev"}}
}

// With autoMerge false the pull request waits; a person merging it (here with git, outside Sluice)
// completes the promotion, reported as merged externally.
func TestAutoMergeFalseWaitsForAPerson(t *testing.T) {
	f := newFixture(t)
	f.bootstrap("dev")
	f.strategy(func(s *promoterv1alpha1.PromotionStrategySpec) {
		oneEnv(s)
		s.Environments[0].AutoMerge = ptr.To(false)
	})
	startPromoter(t, env.Config, t.TempDir())
	d1 := f.dryCommit("change")
	proposed := f.hydrate(d1, "dev")["dev"]

	f.waitEnv("dev", "eligible and waiting", func(e promoterv1alpha1.EnvironmentStatus) bool {
		return e.Eligible && e.PullRequest != nil && e.PullRequest.State == promoterv1alpha1.PullRequestOpen
	})
	prs := f.pullRequests()
	require.Len(t, prs, 1)
	assert.Equal(t, promoterv1alpha1.PullRequestOpen, prs[0].Spec.State)
	assert.Equal(t, proposed, prs[0].Spec.ExpectedHeadSHA)
	assert.NotEqual(t, proposed, f.repo.Branch(t, "dev"), "not merged without a person")

	// The person merges.
	f.repo.SetBranch(t, "dev", proposed)
	// A push to a watched branch arrives as a webhook or at the poll; here, the refresh annotation.
	f.refresh("after merge")
	f.waitEnv("dev", "promoted", testenv.ActiveOn(d1))
	dev := f.waitEnv("dev", "recorded", func(e promoterv1alpha1.EnvironmentStatus) bool { return len(e.History) == 1 })
	assert.True(t, dev.History[0].External)
	assert.Equal(t, d1, dev.History[0].DrySHA)
	// spec.state follows what the person did, so spec and status agree.
	require.NoError(t, testenv.Wait(f.ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		pr, err := env.Sluice.PromoterV1alpha1().PullRequests(f.ns).Get(ctx, "app-dev", metav1.GetOptions{})
		return err == nil && pr.Spec.State == promoterv1alpha1.PullRequestMerged && pr.Status.State == promoterv1alpha1.PullRequestMerged, err
	}), "spec.state=merged beside status.state=merged")
	require.NoError(t, testenv.Wait(f.ctx, 20*time.Second, func(context.Context) (bool, error) {
		return len(f.events(promotionstrategy.EventPullRequestMergedExternally)) == 1, nil
	}))
}

func (f *fixture) refresh(value string) {
	f.t.Helper()
	_, err := testenv.Update(f.ctx, env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns), "app", func(ps *promoterv1alpha1.PromotionStrategy) {
		metav1.SetMetaDataAnnotation(&ps.ObjectMeta, promoterv1alpha1.RefreshAnnotation, value)
	})
	require.NoError(f.t, err)
	require.NoError(f.t, testenv.Wait(f.ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Get(ctx, "app", metav1.GetOptions{})
		return err == nil && ps.Status.LastHandledRefresh == value, err
	}))
}

// Someone pushes to the environment branch between the controller's read and its push: the
// compare-and-swap push fails, the controller fetches again and makes a merge commit that keeps
// both, without force.
func TestNonFastForwardRace(t *testing.T) {
	f := newFixture(t)
	f.bootstrap("dev")
	var raced atomic.Bool
	var racer string
	f.srv.BeforeRefUpdate(func(repo string) {
		if raced.CompareAndSwap(false, true) {
			racer = f.repo.CommitFiles(t, "dev", map[string]string{"hotfix.yaml": "x: 1\n"}, "hotfix pushed meanwhile")
		}
	})
	d1 := f.dryCommit("change")
	proposed := f.hydrate(d1, "dev")["dev"]
	f.strategy(oneEnv)
	startPromoter(t, env.Config, t.TempDir())

	dev := f.waitEnv("dev", "promoted", testenv.PromotedTo(d1))
	require.True(t, raced.Load())
	tip := f.repo.Branch(t, "dev")
	assert.Equal(t, tip, dev.Active.HydratedSHA)
	assert.True(t, f.repo.IsAncestor(t, racer, tip), "the racing commit is kept")
	assert.True(t, f.repo.IsAncestor(t, proposed, tip), "the proposed commit is merged")
	assert.Len(t, f.repo.ReadCommit(t, tip).ParentHashes, 2, "a merge commit, not a force push")
	assert.Len(t, dev.History, 1)
	f.repo.CheckConnectivity(t)
}

// A controller stopped mid-promotion and started again (with the same cache) finishes the job
// without a second pull request or a second merge. The first run also leaves a merge pushed
// whose outcome it never wrote down, as a crash right after the push would.
func TestRestartMidPromotionMakesNoDuplicates(t *testing.T) {
	f := newFixture(t)
	f.bootstrap("dev", "staging", "prod")
	f.strategy(nil)
	cache := t.TempDir()
	stop := startPromoter(t, env.Config, cache)
	d1 := f.dryCommit("change")
	next := f.hydrate(d1, "dev", "staging", "prod")
	dev := f.waitEnv("dev", "promoted", testenv.ActiveOn(d1))
	f.waitEnv("staging", "blocked by dev's health", blockedBy("health on dev"))
	stop()

	// While it is down: dev turns healthy, and "the crash" has already merged staging in git
	// with the PullRequest asked to merge but its status never written.
	f.setStatus("health", dev.Active.HydratedSHA, "success")
	f.repo.SetBranch(t, "staging", next["staging"])
	_, err := testenv.Update(f.ctx, env.Sluice.PromoterV1alpha1().PullRequests(f.ns), "app-staging", func(pr *promoterv1alpha1.PullRequest) {
		pr.Spec.State, pr.Spec.ExpectedHeadSHA = promoterv1alpha1.PullRequestMerged, next["staging"]
	})
	require.NoError(t, err)
	receives := f.srv.Receives()

	startPromoter(t, env.Config, cache)
	f.waitEnv("staging", "promoted", testenv.ActiveOn(d1))
	staging := f.waitEnv("staging", "recorded", func(e promoterv1alpha1.EnvironmentStatus) bool { return len(e.History) == 1 })
	assert.Equal(t, next["staging"], f.repo.Branch(t, "staging"), "no second merge on top")
	assert.Equal(t, receives, f.srv.Receives(), "nothing pushed: the merge was already there")
	require.Len(t, staging.History, 1)
	assert.False(t, staging.History[0].External)

	f.setStatus("health", staging.Active.HydratedSHA, "success")
	f.waitEnv("prod", "promoted", testenv.ActiveOn(d1))
	prs := f.pullRequests()
	assert.Len(t, prs, 3, "one pull request per environment")
	dev = f.waitEnv("dev", "one promotion", func(e promoterv1alpha1.EnvironmentStatus) bool { return len(e.History) == 1 })
	assert.Equal(t, next["dev"], f.repo.Branch(t, "dev"))
}

// eu and us both wait for dev only (fan-out); global waits for both (fan-in).
func TestDAGFanOutAndFanIn(t *testing.T) {
	f := newFixture(t)
	f.bootstrap("dev", "eu", "us", "global")
	f.strategy(func(s *promoterv1alpha1.PromotionStrategySpec) {
		s.ActiveCommitStatuses = nil
		s.Environments = []promoterv1alpha1.Environment{
			{Branch: "dev"}, {Branch: "eu", After: []string{"dev"}}, {Branch: "us", After: []string{"dev"}},
			{Branch: "global", After: []string{"eu", "us"}, AutoMerge: ptr.To(false)},
		}
	})
	startPromoter(t, env.Config, t.TempDir())
	d1 := f.dryCommit("change")
	next := f.hydrate(d1, "dev", "eu", "us", "global")
	f.waitEnv("eu", "promoted", testenv.ActiveOn(d1))
	f.waitEnv("us", "promoted", testenv.ActiveOn(d1))
	f.waitEnv("global", "eligible after both", func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Eligible })
	assert.NotEqual(t, next["global"], f.repo.Branch(t, "global"))

	// A person merges global through the PullRequest object, as on plain git.
	_, err := testenv.Update(f.ctx, env.Sluice.PromoterV1alpha1().PullRequests(f.ns), "app-global", func(pr *promoterv1alpha1.PullRequest) {
		pr.Spec.State = promoterv1alpha1.PullRequestMerged
	})
	require.NoError(t, err)
	f.waitEnv("global", "promoted", testenv.ActiveOn(d1))
	global := f.waitEnv("global", "recorded", func(e promoterv1alpha1.EnvironmentStatus) bool { return len(e.History) == 1 })
	assert.False(t, global.History[0].External)
}

// The same promotion over SSH, against an SSH server started by the test, with the host key
// pinned by known_hosts.
func TestPromotionOverSSH(t *testing.T) {
	f := newFixture(t)
	ssh := f.srv.StartSSH(t)
	_, err := env.Kube.CoreV1().Secrets(f.ns).Create(f.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "deploy-key"},
		Data: map[string][]byte{
			scmv1alpha1.GitSecretKeyIdentity:   ssh.ClientKey,
			scmv1alpha1.GitSecretKeyKnownHosts: ssh.KnownHosts,
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Sluice.ScmV1alpha1().ScmRepositories(f.ns).Create(f.ctx, &scmv1alpha1.ScmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "app-ssh"},
		Spec: scmv1alpha1.ScmRepositorySpec{
			URL: ssh.URL("app"), ProviderRef: scmv1alpha1.LocalObjectReference{Name: "git"}, Owner: "acme", Name: "app",
			Auth: &scmv1alpha1.GitAuth{Type: scmv1alpha1.GitAuthSSH, SecretRef: scmv1alpha1.LocalObjectReference{Name: "deploy-key"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	f.bootstrap("dev")
	d1 := f.dryCommit("change")
	proposed := f.hydrate(d1, "dev")["dev"]
	f.strategy(func(s *promoterv1alpha1.PromotionStrategySpec) {
		oneEnv(s)
		s.RepositoryRef.Name = "app-ssh"
	})
	startPromoter(t, env.Config, t.TempDir())
	f.waitEnv("dev", "promoted over ssh", testenv.ActiveOn(d1))
	assert.Equal(t, proposed, f.repo.Branch(t, "dev"))
}

// A second change after a finished promotion replaces the finished PullRequest and is promoted
// too; history keeps both, newest first.
func TestSuccessivePromotions(t *testing.T) {
	f := newFixture(t)
	f.bootstrap("dev")
	f.strategy(oneEnv)
	startPromoter(t, env.Config, t.TempDir())
	d1 := f.dryCommit("first")
	f.hydrate(d1, "dev")
	f.waitEnv("dev", "first promoted", func(e promoterv1alpha1.EnvironmentStatus) bool { return len(e.History) == 1 })
	d2 := f.dryCommit("second")
	second := f.hydrate(d2, "dev")["dev"]
	dev := f.waitEnv("dev", "second promoted", func(e promoterv1alpha1.EnvironmentStatus) bool { return len(e.History) == 2 })
	assert.Equal(t, d2, dev.Active.DrySHA)
	assert.Equal(t, []string{d2, d1}, []string{dev.History[0].DrySHA, dev.History[1].DrySHA})
	prs := f.pullRequests()
	require.Len(t, prs, 1)
	assert.Equal(t, second, prs[0].Status.MergedHeadSHA)
}
