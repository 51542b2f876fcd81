package pullrequest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/scm"
)

var now = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

const (
	head   = "1111111111111111111111111111111111111111"
	target = "2222222222222222222222222222222222222222"
)

func pr(state promoterv1alpha1.PullRequestState) *promoterv1alpha1.PullRequest {
	return &promoterv1alpha1.PullRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app-dev", Generation: 2},
		Spec: promoterv1alpha1.PullRequestSpec{Title: "Promote", SourceBranch: "dev-next", TargetBranch: "dev",
			ExpectedHeadSHA: head, State: state},
	}
}

const base = "3333333333333333333333333333333333333333"

func withBase(p *promoterv1alpha1.PullRequest, sha string) *promoterv1alpha1.PullRequest {
	p.Spec.ExpectedBaseSHA = sha
	return p
}

func reason(p plan) string {
	if c := conditions.Get(p.Status.Conditions, conditions.Ready); c != nil {
		return c.Reason
	}
	return ""
}

func TestDecideGit(t *testing.T) {
	cases := []struct {
		name       string
		pr         *promoterv1alpha1.PullRequest
		heads      gitHeads
		actions    []action
		state      promoterv1alpha1.PullRequestState
		reason     string
		external   bool
		wantErr    bool
		wantTarget string
	}{
		{name: "open waits", pr: pr(promoterv1alpha1.PullRequestOpen), heads: gitHeads{Head: head, Target: target},
			state: promoterv1alpha1.PullRequestOpen, reason: ReasonOpen},
		{name: "asked to merge: merge on top of the target read", pr: pr(promoterv1alpha1.PullRequestMerged), heads: gitHeads{Head: head, Target: target},
			actions: []action{actMergeGit}, wantTarget: target},
		{name: "merged by a person: the target holds the head", pr: pr(promoterv1alpha1.PullRequestOpen), heads: gitHeads{Head: head, Target: target, HeadInTarget: true},
			state: promoterv1alpha1.PullRequestMerged, reason: ReasonMerged, external: true},
		{name: "asked to merge and already merged: the controller's own merge, not external", pr: pr(promoterv1alpha1.PullRequestMerged), heads: gitHeads{Head: head, Target: target, HeadInTarget: true},
			actions: []action{actMergeGit}, wantTarget: target},
		{name: "closed", pr: pr(promoterv1alpha1.PullRequestClosed), heads: gitHeads{Head: head, Target: target},
			state: promoterv1alpha1.PullRequestClosed, reason: ReasonClosed},
		{name: "asked to merge onto a base that moved: not merged", pr: withBase(pr(promoterv1alpha1.PullRequestMerged), base), heads: gitHeads{Head: head, Target: target},
			state: promoterv1alpha1.PullRequestOpen, reason: ReasonBaseMoved},
		{name: "asked to merge onto the expected base", pr: withBase(pr(promoterv1alpha1.PullRequestMerged), target), heads: gitHeads{Head: head, Target: target},
			actions: []action{actMergeGit}, wantTarget: target},
		{name: "base guard after its own merge (a crash): the merge is found, not refused", pr: withBase(pr(promoterv1alpha1.PullRequestMerged), base), heads: gitHeads{Head: head, Target: head, HeadInTarget: true},
			actions: []action{actMergeGit}, wantTarget: head},
		{name: "asked to merge a missing source branch", pr: pr(promoterv1alpha1.PullRequestMerged), heads: gitHeads{Target: target}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			heads := tc.heads
			p := decideGit(&observation{PR: tc.pr, Now: now, Git: &heads})
			assert.Equal(t, tc.actions, p.Actions)
			assert.Equal(t, tc.state, p.Status.State)
			assert.Equal(t, tc.reason, reason(p))
			assert.Equal(t, tc.external, p.Status.MergedExternally)
			assert.Equal(t, tc.wantErr, p.Err != nil, "%v", p.Err)
			assert.Equal(t, tc.wantTarget, p.Target)
			assert.Equal(t, int64(2), p.Status.ObservedGeneration)
		})
	}
}

func TestDecideSCM(t *testing.T) {
	open := &scm.PullRequest{Number: 7, URL: "https://forge/pr/7", State: scm.PullRequestOpen, HeadSHA: head, Title: "Promote"}
	numbered := func(state promoterv1alpha1.PullRequestState) *promoterv1alpha1.PullRequest {
		p := pr(state)
		p.Status.ID = "7"
		return p
	}
	with := func(r scm.PullRequest) *scm.PullRequest { return &r }
	cases := []struct {
		name    string
		pr      *promoterv1alpha1.PullRequest
		remote  *scm.PullRequest
		actions []action
		state   promoterv1alpha1.PullRequestState
		id      string
		requeue bool
	}{
		{name: "none yet: create, and wait", pr: pr(promoterv1alpha1.PullRequestOpen), actions: []action{actCreate}},
		{name: "none yet, asked to merge: create (the merge follows in the same reconcile)", pr: pr(promoterv1alpha1.PullRequestMerged), actions: []action{actCreate}},
		{name: "open, and asked to merge: merge", pr: numbered(promoterv1alpha1.PullRequestMerged), remote: open, actions: []action{actMergeSCM}, state: promoterv1alpha1.PullRequestOpen, id: "7"},
		{name: "none, and asked to close: closed", pr: pr(promoterv1alpha1.PullRequestClosed), state: promoterv1alpha1.PullRequestClosed},
		{name: "open and in step", pr: numbered(promoterv1alpha1.PullRequestOpen), remote: open, state: promoterv1alpha1.PullRequestOpen, id: "7"},
		{name: "title changed, and asked to merge", pr: numbered(promoterv1alpha1.PullRequestMerged), remote: with(scm.PullRequest{Number: 7, State: scm.PullRequestOpen, Title: "old"}),
			actions: []action{actUpdateText, actMergeSCM}, state: promoterv1alpha1.PullRequestOpen, id: "7"},
		{name: "asked to close", pr: numbered(promoterv1alpha1.PullRequestClosed), remote: open, actions: []action{actClose}, state: promoterv1alpha1.PullRequestOpen, id: "7"},
		{name: "merged on the SCM", pr: numbered(promoterv1alpha1.PullRequestOpen), remote: with(scm.PullRequest{Number: 7, State: scm.PullRequestMerged, HeadSHA: head, MergeCommitSHA: target}),
			state: promoterv1alpha1.PullRequestMerged, id: "7"},
		{name: "closed on the SCM", pr: numbered(promoterv1alpha1.PullRequestOpen), remote: with(scm.PullRequest{Number: 7, State: scm.PullRequestClosed}),
			state: promoterv1alpha1.PullRequestClosed, id: "7"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := decideSCM(&observation{PR: tc.pr, Now: now, SCM: &remote{PR: tc.remote}})
			assert.Equal(t, tc.actions, p.Actions)
			assert.Equal(t, tc.state, p.Status.State)
			assert.Equal(t, tc.id, p.Status.ID)
			assert.Equal(t, tc.requeue, p.Requeue > 0)
		})
	}
	merged := decideSCM(&observation{PR: numbered(promoterv1alpha1.PullRequestOpen), Now: now, SCM: &remote{PR: &scm.PullRequest{State: scm.PullRequestMerged, HeadSHA: head, MergeCommitSHA: target}}})
	assert.True(t, merged.Status.MergedExternally, "merged while spec said open: a person merged it")
	closed := decideSCM(&observation{PR: numbered(promoterv1alpha1.PullRequestOpen), Now: now, SCM: &remote{PR: &scm.PullRequest{State: scm.PullRequestClosed}}})
	assert.True(t, closed.Status.ClosedExternally)
}

// After a merge or close outside Sluice, spec.state is set to what happened.
func TestAlignedSpec(t *testing.T) {
	mergedByHand := pr(promoterv1alpha1.PullRequestOpen)
	mergedByHand.Status = promoterv1alpha1.PullRequestStatus{State: promoterv1alpha1.PullRequestMerged, MergedHeadSHA: head}
	spec, changed := alignedSpec(mergedByHand)
	assert.True(t, changed)
	assert.Equal(t, promoterv1alpha1.PullRequestMerged, spec.State)

	noHead := mergedByHand.DeepCopy()
	noHead.Spec.ExpectedHeadSHA = ""
	spec, changed = alignedSpec(noHead)
	assert.True(t, changed)
	assert.Equal(t, head, spec.ExpectedHeadSHA, "merging needs the head the API asks for: the merged one")

	closedByHand := pr(promoterv1alpha1.PullRequestOpen)
	closedByHand.Status.State = promoterv1alpha1.PullRequestClosed
	spec, changed = alignedSpec(closedByHand)
	assert.True(t, changed)
	assert.Equal(t, promoterv1alpha1.PullRequestClosed, spec.State)

	inStep := pr(promoterv1alpha1.PullRequestMerged)
	inStep.Status.State = promoterv1alpha1.PullRequestMerged
	_, changed = alignedSpec(inStep)
	assert.False(t, changed)

	reopened := pr(promoterv1alpha1.PullRequestMerged)
	reopened.Status.State = promoterv1alpha1.PullRequestClosed
	assert.False(t, finished(reopened), "closed but asked to merge: not finished")
}

// A pull request asked to merge or close is served before one that only needs opening or
// watching, and within each an earlier stage first; a finished one, or one the cache does not
// hold, comes last. One with no stage (a revert's) counts as a first stage.
func TestPriorityPutsMergesFirstThenEarlierStages(t *testing.T) {
	prs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	add := func(name, stage string, want, got promoterv1alpha1.PullRequestState) {
		labels := map[string]string{}
		if stage != "" {
			labels[promoterv1alpha1.StageLabel] = stage
		}
		require.NoError(t, prs.Add(&promoterv1alpha1.PullRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, Labels: labels},
			Spec: promoterv1alpha1.PullRequestSpec{State: want}, Status: promoterv1alpha1.PullRequestStatus{State: got}}))
	}
	add("dev-merge", "0", promoterv1alpha1.PullRequestMerged, "")
	add("revert-merge", "", promoterv1alpha1.PullRequestMerged, promoterv1alpha1.PullRequestOpen)
	add("prod-merge", "2", promoterv1alpha1.PullRequestMerged, promoterv1alpha1.PullRequestOpen)
	add("prod-close", "2", promoterv1alpha1.PullRequestClosed, promoterv1alpha1.PullRequestOpen)
	add("dev-open", "0", promoterv1alpha1.PullRequestOpen, "")
	add("staging-open", "1", promoterv1alpha1.PullRequestOpen, "")
	add("prod-open", "2", "", promoterv1alpha1.PullRequestOpen)
	add("bad-stage-open", "-3", promoterv1alpha1.PullRequestOpen, "")
	add("merged", "0", promoterv1alpha1.PullRequestMerged, promoterv1alpha1.PullRequestMerged)
	r := &Reconciler{PullRequests: promoterlisters.NewPullRequestLister(prs)}
	order := []string{"team/dev-merge", "team/prod-merge", "team/dev-open", "team/staging-open", "team/prod-open", "team/merged"}
	for i := 1; i < len(order); i++ {
		assert.Greater(t, r.Priority(order[i-1]), r.Priority(order[i]), "%s before %s", order[i-1], order[i])
	}
	assert.Equal(t, r.Priority("team/dev-merge"), r.Priority("team/revert-merge"), "no stage is a first stage")
	assert.Equal(t, r.Priority("team/prod-merge"), r.Priority("team/prod-close"), "a close is as urgent as a merge")
	assert.Equal(t, r.Priority("team/dev-open"), r.Priority("team/bad-stage-open"), "a stage that is not a number is a first stage")
	for _, key := range []string{"team/merged", "team/gone", "not/a/key"} {
		assert.Zero(t, r.Priority(key), key)
	}
}
