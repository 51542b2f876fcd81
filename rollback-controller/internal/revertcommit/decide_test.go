package revertcommit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

const (
	dryGood  = "1111111111111111111111111111111111111111"
	dryBad   = "2222222222222222222222222222222222222222"
	dryFix   = "3333333333333333333333333333333333333333"
	tipBad   = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	tipMoved = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	revert1  = "cccccccccccccccccccccccccccccccccccccccc"
	revert2  = "dddddddddddddddddddddddddddddddddddddddd"
)

// seen is an observation of prod running dryBad at tipBad, with dryGood recorded healthy.
func seen(mutate func(*observation)) *observation {
	ps := &promoterv1alpha1.PromotionStrategy{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Status: promoterv1alpha1.PromotionStrategyStatus{Environments: []promoterv1alpha1.EnvironmentStatus{{
			Branch: "prod", LastHealthyDrySHAs: []promoterv1alpha1.HealthyDrySHA{{SHA: dryGood}}}}}}
	o := &observation{
		rc:       revert(nil),
		strategy: ps, env: promoterv1alpha1.Environment{Branch: "prod"},
		tip: tipBad, tipDry: dryBad, tipNotNewer: true,
	}
	if mutate != nil {
		mutate(o)
	}
	return o
}

// written is a revert whose commit revert1 was pushed on tipBad.
func written(o *observation) {
	st := &o.rc.Status
	st.BadDrySHA, st.TargetDrySHA, st.RevertSHA, st.BaseSHA = dryBad, dryGood, revert1, tipBad
}

func withPR(state, want promoterv1alpha1.PullRequestState) func(*observation) {
	return func(o *observation) {
		written(o)
		o.pr = &promoterv1alpha1.PullRequest{
			ObjectMeta: metav1.ObjectMeta{Name: "revert-web-prod", Labels: pullRequestLabels(o.rc, o.strategy)},
			Spec:       promoterv1alpha1.PullRequestSpec{ExpectedHeadSHA: revert1, ExpectedBaseSHA: tipBad, State: want},
			Status:     promoterv1alpha1.PullRequestStatus{State: state},
		}
	}
}

// decideCase is an observation and the step decide must name for it.
type decideCase struct {
	name   string
	o      *observation
	step   step
	reason string
	shas   shas
}

// decideCases are the situations a pass meets, from the first write to the end of a revert.
func decideCases() []decideCase {
	return []decideCase{
		{name: "nothing written: write the revert on the tip, back to the last healthy", o: seen(nil),
			step: stepWrite, shas: shas{bad: dryBad, target: dryGood}},
		{name: "no healthy dry SHA but the bad one", o: seen(func(o *observation) { o.strategy.Status.Environments[0].LastHealthyDrySHAs[0].SHA = dryBad }),
			step: stepStall, reason: "NoHealthyDrySHA"},
		{name: "asked to go back to what it runs", o: seen(func(o *observation) { o.rc.Spec.DrySHA = dryBad }),
			step: stepStall, reason: "AlreadyOnTarget"},
		{name: "a commit of an earlier attempt is adopted, with its dry SHAs", o: seen(func(o *observation) {
			o.adopted = &ownCommit{sha: revert1, parent: tipBad, shas: shas{bad: dryBad, target: dryFix}}
		}), step: stepAdopt, shas: shas{bad: dryBad, target: dryFix}},
		{name: "the recorded commit is on the revert branch: nothing to adopt", o: seen(func(o *observation) {
			written(o)
			o.adopted = &ownCommit{sha: revert1, parent: tipBad, shas: shas{bad: dryBad, target: dryGood}}
		}), step: stepOpen},
		{name: "written again on a moved tip and merged, the pass died before recording: adopt before the merge", o: seen(func(o *observation) {
			withPR(promoterv1alpha1.PullRequestMerged, promoterv1alpha1.PullRequestMerged)(o)
			o.adopted = &ownCommit{sha: revert2, parent: tipMoved, shas: shas{bad: dryBad, target: dryGood}}
		}), step: stepAdopt, shas: shas{bad: dryBad, target: dryGood}},
		{name: "written, no pull request: open it", o: seen(written), step: stepOpen},
		{name: "pull request asks for another head: sync it", o: seen(func(o *observation) {
			withPR(promoterv1alpha1.PullRequestOpen, promoterv1alpha1.PullRequestMerged)(o)
			o.pr.Spec.ExpectedHeadSHA = tipMoved
		}), step: stepSync},
		{name: "auto-merge and a pull request left open: ask for the merge", o: seen(withPR(promoterv1alpha1.PullRequestOpen, promoterv1alpha1.PullRequestOpen)),
			step: stepSync},
		{name: "merge asked: wait", o: seen(withPR(promoterv1alpha1.PullRequestOpen, promoterv1alpha1.PullRequestMerged)), step: stepWait},
		{name: "pull request merged", o: seen(withPR(promoterv1alpha1.PullRequestMerged, promoterv1alpha1.PullRequestMerged)), step: stepMerged},
		{name: "the environment holds the revert commit: merged, whoever did it", o: seen(func(o *observation) { written(o); o.inTip = true }), step: stepMerged},
		{name: "pull request closed unmerged", o: seen(withPR(promoterv1alpha1.PullRequestClosed, promoterv1alpha1.PullRequestMerged)),
			step: stepFail, reason: "PullRequestClosed"},
		{name: "pull request closed by an earlier pass that ended the revert: ended again the same way", o: seen(func(o *observation) {
			withPR(promoterv1alpha1.PullRequestClosed, promoterv1alpha1.PullRequestClosed)(o)
			o.pr.Annotations = map[string]string{EndedAnnotation: "FixedForward: prod moved on to dry 3333333"}
			o.tip, o.tipDry, o.tipNotNewer = tipMoved, dryFix, false
		}), step: stepSupersede, reason: "FixedForward"},
		{name: "tip moved, still on the bad dry SHA: write again on the new tip", o: seen(func(o *observation) { written(o); o.tip = tipMoved }),
			step: stepWrite, shas: shas{bad: dryBad, target: dryGood}},
		{name: "tip moved on to a newer dry SHA: superseded by the fix", o: seen(func(o *observation) {
			written(o)
			o.tip, o.tipDry, o.tipNotNewer = tipMoved, dryFix, false
		}), step: stepSupersede, reason: "FixedForward"},
		{name: "the bad dry SHA named in spec is not what runs, and the tip is newer: nothing to revert", o: seen(func(o *observation) {
			o.rc.Spec.BadDrySHA = dryGood
			o.tipNotNewer = false
		}), step: stepSupersede, reason: "FixedForward"},
		{name: "tip moved back to the target by someone else: superseded", o: seen(func(o *observation) {
			written(o)
			o.tip, o.tipDry = tipMoved, dryGood
		}), step: stepSupersede, reason: "AlreadyRestored"},
		{name: "another revert merged before this one wrote anything: superseded, naming it", o: seen(func(o *observation) {
			o.rc.Spec.BadDrySHA = dryBad
			o.tip, o.tipDry, o.tipRevertedBy = tipMoved, dryGood, "team/first"
		}), step: stepSupersede, reason: "AlreadyRestored"},
		{name: "another revert of the environment in flight: superseded before writing anything", o: seen(func(o *observation) {
			o.claim = &claim{pr: &promoterv1alpha1.PullRequest{ObjectMeta: metav1.ObjectMeta{Name: "revert-app-prod"}}, holder: "first", inFlight: true}
		}), step: stepSupersede, reason: "AnotherRevertInFlight"},
		{name: "a finished revert's finished pull request holds the name: reclaim it", o: seen(func(o *observation) {
			written(o)
			o.claim = &claim{pr: &promoterv1alpha1.PullRequest{Status: promoterv1alpha1.PullRequestStatus{State: promoterv1alpha1.PullRequestMerged}}, holder: "last-week"}
		}), step: stepReclaim},
		{name: "a finished revert's pull request still open: wait for it", o: seen(func(o *observation) {
			written(o)
			o.claim = &claim{pr: &promoterv1alpha1.PullRequest{}, holder: "superseded-one"}
		}), step: stepWait},
	}
}

func TestDecide(t *testing.T) {
	for _, tc := range decideCases() {
		t.Run(tc.name, func(t *testing.T) {
			pl := decide(tc.o)
			assert.Equal(t, tc.step, pl.step, "%+v", pl)
			assert.Equal(t, tc.reason, pl.reason)
			assert.Equal(t, tc.shas, pl.shas)
			if pl.step == stepSupersede && pl.reason == "FixedForward" {
				assert.Contains(t, pl.message, tc.o.tipDry[:7], "names the dry commit that superseded it")
			}
			if pl.reason == "AlreadyRestored" && tc.o.tipRevertedBy != "" {
				assert.Contains(t, pl.message, "RevertCommit team/first")
			}
			if pl.reason == "AnotherRevertInFlight" {
				assert.Contains(t, pl.message, "RevertCommit first", "names the revert that holds the claim")
			}
		})
	}
}

func TestDecideWritesNothing(t *testing.T) {
	o := seen(withPR(promoterv1alpha1.PullRequestOpen, promoterv1alpha1.PullRequestMerged))
	before := o.rc.DeepCopy()
	decide(o)
	assert.Equal(t, before, o.rc)
}

// The seed's three modes, and the Gate: what the revert asks of its pull request.
func TestMayMerge(t *testing.T) {
	checked := func(phase commitstatusv1alpha1.CommitStatusPhase) func(*observation) {
		return func(o *observation) {
			withPR(promoterv1alpha1.PullRequestOpen, promoterv1alpha1.PullRequestOpen)(o)
			o.rc.Spec.RequiredCommitStatuses = []rollbackv1alpha1.CommitStatusKey{{Key: "kubelint"}}
			o.checksSHA = revert1
			if phase != "" {
				o.checks = map[string]commitstatusv1alpha1.CommitStatusPhase{"kubelint": phase}
			}
		}
	}
	no := false
	cases := []struct {
		name   string
		o      *observation
		ok     bool
		reason string
		step   step
	}{
		{name: "autoMerge alone: merge at once", o: seen(withPR(promoterv1alpha1.PullRequestOpen, promoterv1alpha1.PullRequestOpen)), ok: true, step: stepSync},
		{name: "autoMerge false: a person merges", o: seen(func(o *observation) {
			withPR(promoterv1alpha1.PullRequestOpen, promoterv1alpha1.PullRequestOpen)(o)
			o.rc.Spec.AutoMerge = &no
		}), reason: "WaitingForMerge", step: stepWait},
		{name: "a required check pending keeps it open", o: seen(checked(commitstatusv1alpha1.CommitStatusPending)), reason: "WaitingForChecks", step: stepWait},
		{name: "a required check not reported keeps it open", o: seen(checked("")), reason: "WaitingForChecks", step: stepWait},
		{name: "checks of an older revert commit count for nothing", o: seen(func(o *observation) {
			checked(commitstatusv1alpha1.CommitStatusSuccess)(o)
			o.checksSHA = tipMoved
		}), reason: "WaitingForChecks", step: stepWait},
		{name: "the required check passed: merge", o: seen(checked(commitstatusv1alpha1.CommitStatusSuccess)), ok: true, step: stepSync},
		{name: "a closed Gate holds it", o: seen(func(o *observation) {
			withPR(promoterv1alpha1.PullRequestOpen, promoterv1alpha1.PullRequestOpen)(o)
			o.gateHold = "held by prod"
		}), reason: "HeldByGate", step: stepWait},
		{name: "bypassGates merges through the Gate, and it is recorded", o: seen(func(o *observation) {
			withPR(promoterv1alpha1.PullRequestOpen, promoterv1alpha1.PullRequestOpen)(o)
			o.gateHold, o.rc.Spec.BypassGates = "held by prod", true
		}), ok: true, step: stepSync},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := mayMerge(tc.o)
			assert.Equal(t, tc.ok, m.ok)
			assert.Equal(t, tc.reason, m.reason)
			assert.Equal(t, tc.step, decide(tc.o).step)
			assert.Equal(t, m, decide(tc.o).merge, "the verdict apply acts on is decide's")
			assert.Equal(t, tc.o.gateHold != "" && tc.ok, m.bypass != "", "a bypass is named when it happens")
		})
	}
}
