package promotionstrategy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/promotion"
)

var now = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// sha makes a 40-character commit id from a short name, so names read well in the cases.
func sha(name string) string {
	out := []byte("0000000000000000000000000000000000000000")
	copy(out, name)
	return string(out)
}

// dryLine orders dry commits d0 < d1 < d2 < d3 on the dry branch.
func dryLine() dryOrder {
	names := []string{"d0", "d1", "d2", "d3"}
	o := dryOrder{}
	for i, x := range names {
		for j, y := range names {
			switch {
			case i > j:
				o[[2]string{sha(x), sha(y)}] = orderResult{Order: promotion.Newer}
			case i < j:
				o[[2]string{sha(x), sha(y)}] = orderResult{Order: promotion.Older}
			}
		}
	}
	return o
}

func strategy() *promoterv1alpha1.PromotionStrategy {
	return &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app", Generation: 3, UID: "ps-uid"},
		Spec: promoterv1alpha1.PromotionStrategySpec{
			RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, DryBranch: "main",
			Environments: []promoterv1alpha1.Environment{{Branch: "dev"}, {Branch: "staging"}, {Branch: "prod"}},
		},
	}
}

// running is an environment that runs dry commit d (hydrated h-<branch>-<d>), nothing proposed.
func running(branch, d string) environment {
	return environment{
		Spec:   promoterv1alpha1.Environment{Branch: branch},
		Active: promoterv1alpha1.CommitState{DrySHA: sha(d), HydratedSHA: sha("h" + branch + d)},
	}
}

// proposing adds a proposed commit for dry commit d.
func proposing(e environment, d string) environment {
	e.Proposed = promoterv1alpha1.CommitState{DrySHA: sha(d), HydratedSHA: sha("p" + e.Spec.Branch + d), Subject: "change " + d}
	return e
}

func observe(t *testing.T, ps *promoterv1alpha1.PromotionStrategy, envs ...environment) *observation {
	t.Helper()
	g, err := environmentGraph(ps.Spec)
	require.NoError(t, err)
	return &observation{Strategy: ps, Graph: g, Now: now, Envs: envs, Order: dryLine()}
}

func pullRequest(ps *promoterv1alpha1.PromotionStrategy, branch string, spec promoterv1alpha1.PullRequestSpec, status promoterv1alpha1.PullRequestStatus) *promoterv1alpha1.PullRequest {
	pr := newPullRequest(ps, branch, spec)
	pr.UID, pr.Status = "pr-uid", status
	return pr
}

func ready(t *testing.T, d decision) *metav1.Condition {
	t.Helper()
	c := conditions.Get(d.Status.Conditions, conditions.Ready)
	require.NotNil(t, c)
	return c
}

func reasons(events []event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Reason)
	}
	return out
}

// decideCase is one observation and what decide must make of it.
type decideCase struct {
	name  string
	obs   func(t *testing.T) *observation
	check func(t *testing.T, d decision)
}

var decideCases = []decideCase{{
	name: "nothing proposed: Ready, a ProposedCommit per environment, nothing announced",
	obs: func(t *testing.T) *observation {
		return observe(t, strategy(), running("dev", "d1"), running("staging", "d1"), running("prod", "d1"))
	},
	check: func(t *testing.T, d decision) {
		assert.Equal(t, metav1.ConditionTrue, ready(t, d).Status)
		assert.Equal(t, ReasonPromoted, ready(t, d).Reason)
		assert.Equal(t, "dev@d100000 staging@d100000 prod@d100000", ready(t, d).Message)
		for _, p := range d.Envs {
			assert.Nil(t, p.PullRequest.Create)
			assert.NotNil(t, p.ProposedCommit.New)
			assert.True(t, p.ProposedCommit.State.Ready)
		}
		assert.Empty(t, d.Announce)
		assert.Equal(t, int64(3), d.Status.ObservedGeneration)
	},
}, {
	name: "an eligible change is asked to merge: Started once the write succeeds, Reconciling",
	obs: func(t *testing.T) *observation {
		return observe(t, strategy(), proposing(running("dev", "d1"), "d2"), running("staging", "d1"), running("prod", "d1"))
	},
	check: func(t *testing.T, d decision) {
		create := d.Envs[0].PullRequest.Create
		require.NotNil(t, create)
		assert.Equal(t, promoterv1alpha1.PullRequestMerged, create.Spec.State)
		assert.Equal(t, sha("pdevd2"), create.Spec.ExpectedHeadSHA)
		assert.Equal(t, "dev-next", create.Spec.SourceBranch)
		assert.Equal(t, "Promote d200000 to dev: change d2", create.Spec.Title)
		require.NotNil(t, d.Envs[0].PullRequest.Started)
		assert.Equal(t, EventPromotionStarted, d.Envs[0].PullRequest.Started.Reason)
		assert.True(t, conditions.IsTrue(d.Status.Conditions, conditions.Reconciling))
		assert.Equal(t, ReasonPromoting, ready(t, d).Reason)
		assert.Equal(t, metav1.ConditionFalse, ready(t, d).Status)
	},
}, {
	name: "a blocked change is not Ready; blocks name rule and environment; announced once",
	obs: func(t *testing.T) *observation {
		return observe(t, strategy(), running("dev", "d1"), proposing(running("staging", "d1"), "d2"), running("prod", "d1"))
	},
	check: func(t *testing.T, d decision) {
		st := d.Status.Environments[1]
		assert.Equal(t, []promoterv1alpha1.PromotionBlock{{Rule: promoterv1alpha1.BlockEarlierEnvironmentActive, Environment: "dev",
			Message: "rule 2: dev is active on dry d100000, not yet on d200000"}}, st.Blocks)
		assert.Equal(t, "rule 2: dev is active on dry d100000, not yet on d200000", st.Blocked)
		assert.Equal(t, promoterv1alpha1.PullRequestOpen, d.Envs[1].PullRequest.Create.Spec.State)
		assert.Nil(t, d.Envs[1].PullRequest.Started)
		assert.Equal(t, []string{EventPromotionBlocked}, reasons(d.Announce.Events))
		assert.Equal(t, []blockCount{{Environment: "staging", Rule: promotion.RuleEarlierEnvironmentActive}}, d.Announce.Blocks)
		assert.Equal(t, ReasonBlocked, ready(t, d).Reason)
		assert.Equal(t, metav1.ConditionFalse, ready(t, d).Status)
		assert.False(t, conditions.IsTrue(d.Status.Conditions, conditions.Reconciling), "waiting on a rule is not progress kstatus should wait for")
	},
}, {
	name: "the same block again is not announced again",
	obs: func(t *testing.T) *observation {
		ps := strategy()
		ps.Status.Environments = []promoterv1alpha1.EnvironmentStatus{{Branch: "staging", Blocked: "rule 2: dev is active on dry d100000, not yet on d200000"}}
		return observe(t, ps, running("dev", "d1"), proposing(running("staging", "d1"), "d2"), running("prod", "d1"))
	},
	check: func(t *testing.T, d decision) {
		assert.Empty(t, d.Announce.Events)
		assert.Empty(t, d.Announce.Blocks)
	},
}, {
	name: "autoMerge false: eligible, open, waiting for a person, not Ready",
	obs: func(t *testing.T) *observation {
		ps := strategy()
		ps.Spec.Environments[0].AutoMerge = ptr.To(false)
		dev := proposing(running("dev", "d1"), "d2")
		dev.Spec.AutoMerge = ptr.To(false)
		return observe(t, ps, dev, running("staging", "d1"), running("prod", "d1"))
	},
	check: func(t *testing.T, d decision) {
		assert.Equal(t, promoterv1alpha1.PullRequestOpen, d.Envs[0].PullRequest.Create.Spec.State)
		assert.Nil(t, d.Envs[0].PullRequest.Started)
		assert.True(t, d.Status.Environments[0].Eligible)
		assert.Equal(t, ReasonWaitingForMerge, ready(t, d).Reason)
		assert.Equal(t, metav1.ConditionFalse, ready(t, d).Status)
	},
}, {
	name: "a merged pull request is recorded with its SCM number and URL, and announced",
	obs: func(t *testing.T) *observation {
		ps := strategy()
		dev := running("dev", "d2")
		dev.PullRequest = pullRequest(ps, "dev", promoterv1alpha1.PullRequestSpec{State: promoterv1alpha1.PullRequestMerged, ExpectedHeadSHA: sha("pdevd2")},
			promoterv1alpha1.PullRequestStatus{State: promoterv1alpha1.PullRequestMerged, ID: "42", URL: "https://forge/pr/42",
				MergedHeadSHA: sha("pdevd2"), MergeSHA: sha("hdevd2"), MergeTime: &metav1.Time{Time: now}})
		dev.Merged = &mergedCommit{DrySHA: sha("d2"), DryTime: now.Add(-time.Hour)}
		return observe(t, ps, dev, running("staging", "d1"), running("prod", "d1"))
	},
	check: func(t *testing.T, d decision) {
		h := d.Status.Environments[0].History
		require.Len(t, h, 1)
		assert.Equal(t, promoterv1alpha1.PromotionRecord{DrySHA: sha("d2"), HydratedSHA: sha("pdevd2"), MergeSHA: sha("hdevd2"),
			Time: metav1.Time{Time: now}, PullRequest: "app-dev", PullRequestNumber: 42, PullRequestURL: "https://forge/pr/42"}, h[0])
		assert.Equal(t, []string{EventPromotionCompleted}, reasons(d.Announce.Events))
		assert.Equal(t, []promotionCount{{Environment: "dev", LeadTime: time.Hour}}, d.Announce.Promotions)
		assert.Equal(t, ReasonPromoted, ready(t, d).Reason)
	},
}, {
	name: "a merge already in history is not recorded or announced again",
	obs: func(t *testing.T) *observation {
		ps := strategy()
		ps.Status.Environments = []promoterv1alpha1.EnvironmentStatus{{Branch: "dev", History: []promoterv1alpha1.PromotionRecord{{DrySHA: sha("d2"), HydratedSHA: sha("pdevd2"), MergeSHA: sha("hdevd2")}}}}
		dev := running("dev", "d2")
		dev.PullRequest = pullRequest(ps, "dev", promoterv1alpha1.PullRequestSpec{State: promoterv1alpha1.PullRequestMerged},
			promoterv1alpha1.PullRequestStatus{State: promoterv1alpha1.PullRequestMerged, MergedHeadSHA: sha("pdevd2"), MergeSHA: sha("hdevd2"), MergedExternally: true})
		return observe(t, ps, dev, running("staging", "d1"), running("prod", "d1"))
	},
	check: func(t *testing.T, d decision) {
		assert.Len(t, d.Status.Environments[0].History, 1)
		assert.Empty(t, d.Announce)
	},
}, {
	name: "a merge by a person is announced as external",
	obs: func(t *testing.T) *observation {
		ps := strategy()
		dev := running("dev", "d2")
		dev.PullRequest = pullRequest(ps, "dev", promoterv1alpha1.PullRequestSpec{State: promoterv1alpha1.PullRequestOpen},
			promoterv1alpha1.PullRequestStatus{State: promoterv1alpha1.PullRequestMerged, MergedHeadSHA: sha("pdevd2"), MergeSHA: sha("hdevd2"), MergedExternally: true})
		dev.Merged = &mergedCommit{DrySHA: sha("d2")}
		return observe(t, ps, dev, running("staging", "d1"), running("prod", "d1"))
	},
	check: func(t *testing.T, d decision) {
		assert.Equal(t, []string{EventPullRequestMergedExternally, EventPromotionCompleted}, reasons(d.Announce.Events))
		assert.Equal(t, []promotionCount{{Environment: "dev", External: true, LeadTime: -1}}, d.Announce.Promotions)
	},
}, {
	name: "after a rollback the reverted dry SHA is held, named by its RevertCommit",
	obs: func(t *testing.T) *observation {
		prod := proposing(running("prod", "d1"), "d2")
		prod.Holds = []promotion.Hold{{RevertCommit: "team/prod-bad", DrySHA: sha("d2")}}
		return observe(t, strategy(), running("dev", "d2"), running("staging", "d2"), prod)
	},
	check: func(t *testing.T, d decision) {
		st := d.Status.Environments[2]
		require.Len(t, st.Blocks, 1)
		assert.Equal(t, promoterv1alpha1.BlockHeldAfterRollback, st.Blocks[0].Rule)
		assert.Equal(t, "prod", st.Blocks[0].Environment)
		assert.Contains(t, st.Blocked, "RevertCommit team/prod-bad reverted dry d200000")
		assert.Equal(t, []string{EventPromotionHeldAfterRollback}, reasons(d.Announce.Events))
		assert.Contains(t, d.Announce.Events[0].Message, "team/prod-bad")
		assert.Equal(t, promoterv1alpha1.PullRequestOpen, d.Envs[2].PullRequest.Create.Spec.State, "held: never asked to merge")
		assert.Equal(t, ReasonBlocked, ready(t, d).Reason)
	},
}, {
	name: "a fix forward after a rollback promotes",
	obs: func(t *testing.T) *observation {
		prod := proposing(running("prod", "d1"), "d3")
		prod.Holds = []promotion.Hold{{RevertCommit: "team/prod-bad", DrySHA: sha("d2")}}
		return observe(t, strategy(), running("dev", "d3"), running("staging", "d3"), prod)
	},
	check: func(t *testing.T, d decision) {
		assert.Empty(t, d.Status.Environments[2].Blocks)
		assert.Equal(t, promoterv1alpha1.PullRequestMerged, d.Envs[2].PullRequest.Create.Spec.State)
	},
}, {
	name: "a pull request closed unmerged blocks, and says so",
	obs: func(t *testing.T) *observation {
		ps := strategy()
		dev := proposing(running("dev", "d1"), "d2")
		dev.PullRequest = pullRequest(ps, "dev", promoterv1alpha1.PullRequestSpec{State: promoterv1alpha1.PullRequestClosed, ExpectedHeadSHA: sha("pdevd2")},
			promoterv1alpha1.PullRequestStatus{State: promoterv1alpha1.PullRequestClosed})
		return observe(t, ps, dev, running("staging", "d1"), running("prod", "d1"))
	},
	check: func(t *testing.T, d decision) {
		st := d.Status.Environments[0]
		require.NotEmpty(t, st.Blocks)
		assert.Equal(t, promoterv1alpha1.BlockPullRequestClosed, st.Blocks[0].Rule)
		assert.Nil(t, d.Envs[0].PullRequest.Create)
		assert.Empty(t, d.Envs[0].PullRequest.Replace)
		assert.Equal(t, ReasonBlocked, ready(t, d).Reason)
	},
}, {
	name: "a new proposal after a finished pull request replaces it",
	obs: func(t *testing.T) *observation {
		ps := strategy()
		dev := proposing(running("dev", "d2"), "d3")
		dev.PullRequest = pullRequest(ps, "dev", promoterv1alpha1.PullRequestSpec{State: promoterv1alpha1.PullRequestMerged, ExpectedHeadSHA: sha("pdevd2")},
			promoterv1alpha1.PullRequestStatus{State: promoterv1alpha1.PullRequestMerged, MergedHeadSHA: sha("pdevd2"), MergeSHA: sha("hdevd2d")})
		return observe(t, ps, dev, running("staging", "d1"), running("prod", "d1"))
	},
	check: func(t *testing.T, d decision) {
		p := d.Envs[0].PullRequest
		assert.Equal(t, "pr-uid", string(p.Replace))
		require.NotNil(t, p.Create)
		assert.Equal(t, sha("pdevd3"), p.Create.Spec.ExpectedHeadSHA)
	},
}, {
	name: "an open pull request whose proposed branch is gone is closed",
	obs: func(t *testing.T) *observation {
		ps := strategy()
		dev := running("dev", "d1")
		dev.PullRequest = pullRequest(ps, "dev", promoterv1alpha1.PullRequestSpec{State: promoterv1alpha1.PullRequestOpen, ExpectedHeadSHA: sha("pdevd2")},
			promoterv1alpha1.PullRequestStatus{State: promoterv1alpha1.PullRequestOpen})
		o := observe(t, ps, dev, running("staging", "d1"), running("prod", "d1"))
		o.Fetched = true
		return o
	},
	check: func(t *testing.T, d decision) {
		require.NotNil(t, d.Envs[0].PullRequest.Update)
		assert.Equal(t, promoterv1alpha1.PullRequestClosed, d.Envs[0].PullRequest.Update.Spec.State)
		assert.Equal(t, "team/app-dev", d.Envs[0].PullRequest.Enqueue, "looked at after the fetch")
	},
}, {
	name: "an open pull request is looked at after a fetch only",
	obs: func(t *testing.T) *observation {
		ps := strategy()
		staging := proposing(running("staging", "d1"), "d2")
		staging.PullRequest = pullRequest(ps, "staging", desiredSpec(ps, staging, promotion.Verdict{Proposed: true}),
			promoterv1alpha1.PullRequestStatus{State: promoterv1alpha1.PullRequestOpen})
		return observe(t, ps, proposing(running("dev", "d1"), "d2"), staging, running("prod", "d1"))
	},
	check: func(t *testing.T, d decision) {
		assert.Empty(t, d.Envs[1].PullRequest.Enqueue, "a reconcile that did not fetch: nothing moved for it to find")
		assert.Nil(t, d.Envs[1].PullRequest.Update, "its spec is already what is desired")
	},
}, {
	name: "owned objects carry the strategy's labels, for a sharded promoter, and their stage",
	obs: func(t *testing.T) *observation {
		ps := strategy()
		ps.Labels = map[string]string{"shard": "a"}
		staging := proposing(running("staging", "d1"), "d2")
		staging.PullRequest = pullRequest(strategy(), "staging", desiredSpec(ps, staging, promotion.Verdict{Proposed: true}), promoterv1alpha1.PullRequestStatus{})
		return observe(t, ps, proposing(running("dev", "d1"), "d2"), staging, running("prod", "d1"))
	},
	check: func(t *testing.T, d decision) {
		assert.Equal(t, "a", d.Envs[0].PullRequest.Create.Labels["shard"])
		assert.Equal(t, "a", d.Envs[0].ProposedCommit.New.Labels["shard"])
		require.NotNil(t, d.Envs[1].PullRequest.Update, "an existing pull request gets the label")
		assert.Equal(t, "a", d.Envs[1].PullRequest.Update.Labels["shard"])
		assert.Equal(t, "staging", d.Envs[1].PullRequest.Update.Labels[promoterv1alpha1.EnvironmentLabel])
		assert.Equal(t, "0", d.Envs[0].PullRequest.Create.Labels[promoterv1alpha1.StageLabel])
		assert.Equal(t, "0", d.Envs[0].ProposedCommit.New.Labels[promoterv1alpha1.StageLabel])
		assert.Equal(t, "1", d.Envs[1].PullRequest.Update.Labels[promoterv1alpha1.StageLabel], "the pull requests opened before the stage label get it")
	},
}, {
	name: "a proposed commit already in the environment branch proposes nothing",
	obs: func(t *testing.T) *observation {
		dev := proposing(running("dev", "d2"), "d2")
		dev.ProposedMerged = true
		return observe(t, strategy(), dev, running("staging", "d1"), running("prod", "d1"))
	},
	check: func(t *testing.T, d decision) {
		assert.Nil(t, d.Envs[0].PullRequest.Create)
		assert.Equal(t, ReasonPromoted, ready(t, d).Reason)
	},
}}

func TestDecide(t *testing.T) {
	for _, tc := range decideCases {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, decide(tc.obs(t)))
		})
	}
}

// Healthy active commits are remembered for rollbacks; the refresh annotation is acknowledged.
func TestDecideRecordsHealthAndRefresh(t *testing.T) {
	ps := strategy()
	ps.Annotations = map[string]string{promoterv1alpha1.RefreshAnnotation: "r1"}
	dev := running("dev", "d1")
	dev.ActiveChecks = []promotion.Check{{Key: "health", Phase: promotion.Success}}
	staging := running("staging", "d1")
	staging.ActiveChecks = []promotion.Check{{Key: "health"}}
	d := decide(observe(t, ps, dev, staging, running("prod", "d1")))
	assert.Equal(t, "r1", d.Status.LastHandledRefresh)
	require.Len(t, d.Status.Environments[0].LastHealthyDrySHAs, 1)
	assert.Equal(t, sha("d1"), d.Status.Environments[0].LastHealthyDrySHAs[0].SHA)
	assert.Empty(t, d.Status.Environments[1].LastHealthyDrySHAs, "a missing check is not healthy")
	assert.Equal(t, promotion.Pending, d.Status.Environments[1].Active.Phase)
}

// A reconcile that did not fetch, seconds after one that did, decides the status it already has:
// nothing in it ticks with the clock, so the strategy's own status write is a fixed point and
// does not bring it back for ever. Only a fetch moves lastFetchTime.
func TestStatusIsAFixedPointWithoutAFetch(t *testing.T) {
	ps := strategy()
	envs := func() []environment {
		staging := proposing(running("staging", "d1"), "d2")
		staging.PullRequest = pullRequest(ps, "staging", desiredSpec(ps, staging, promotion.Verdict{Proposed: true}),
			promoterv1alpha1.PullRequestStatus{State: promoterv1alpha1.PullRequestOpen})
		return []environment{running("dev", "d2"), staging, running("prod", "d1")}
	}
	first := observe(t, ps, envs()...)
	first.Fetched = true
	fetched := decide(first)
	require.NotNil(t, fetched.Status.LastFetchTime)
	assert.Equal(t, now.Unix(), fetched.Status.LastFetchTime.Unix(), "a fetch is recorded")

	ps.Status = fetched.Status
	later := observe(t, ps, envs()...)
	later.Now = now.Add(7 * time.Second)
	assert.Equal(t, fetched.Status, decide(later).Status, "seconds later, without a fetch, the same status")

	later.Fetched = true
	assert.Equal(t, later.Now.Unix(), decide(later).Status.LastFetchTime.Unix(), "the next fetch is recorded")
}
