package rollbackpolicy

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

// observedPolicy is policy p of strategy app observing envs at now.
func observedPolicy(now time.Time, envs ...Observed) observation {
	return observation{
		policy:   &rollbackv1alpha1.RollbackPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "p"}},
		strategy: &promoterv1alpha1.PromotionStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app"}},
		envs:     envs, rules: rules, now: now,
	}
}

// failingProd is prod running bad since t0, failing since t0, as the policy last saw it.
func failingProd(mutate ...func(*Observed)) Observed {
	env := prodOn(bad, t0)
	o := Observed{Env: env, Failure: healthFails, Previous: failingSince(env, t0), Policy: "p"}
	for _, m := range mutate {
		m(&o)
	}
	return o
}

func staging(dry string) Observed {
	env := prodOn(dry, t0)
	env.Branch = "staging"
	return Observed{Env: env, Policy: "p", Previous: rollbackv1alpha1.PolicyEnvironmentStatus{Branch: "staging"}}
}

func TestDecideThePolicysRevertCommits(t *testing.T) {
	others := make([]string, rollbackv1alpha1.MaxRevertedDrySHAs)
	for i := range others {
		others[i] = fmt.Sprintf("%040d", i+10)
	}
	cases := []struct {
		name    string
		envs    []Observed
		now     time.Time
		creates []string // RevertCommit names, in order
		// reverted is prod's status.revertedDrySHAs after the decision.
		reverted []string
		triggers int
		requeue  time.Duration
	}{
		{name: "failing past the threshold: one RevertCommit, named for policy, env and bad dry SHA",
			envs: []Observed{failingProd()}, now: t0.Add(2 * time.Minute),
			creates: []string{RevertCommitName("p", "prod", bad)}, reverted: []string{bad}, triggers: 1},
		{name: "not yet past the threshold: nothing created, woken when it ends",
			envs: []Observed{failingProd()}, now: t0.Add(30 * time.Second), requeue: 30 * time.Second},
		{name: "never twice: a bad dry SHA the status records reverted is not reverted again",
			envs: []Observed{failingProd(func(o *Observed) { o.Previous.RevertedDrySHAs = []string{bad} })},
			now:  t0.Add(2 * time.Minute), reverted: []string{bad}, triggers: 1},
		{name: "cooldown: after a rollback, nothing until the cooldown ends",
			envs: []Observed{failingProd(func(o *Observed) {
				o.Previous.RevertedDrySHAs = []string{fix}
				o.Previous.LastRollback = &rollbackv1alpha1.PolicyRollback{RevertCommit: "p-prod-fix", BadDrySHA: fix, Time: metav1.NewTime(t0.Add(-time.Hour))}
			})},
			now: t0.Add(2 * time.Minute), reverted: []string{fix}, triggers: 1, requeue: time.Hour - 2*time.Minute},
		{name: "max reverts: the record of reverted dry SHAs keeps the newest, up to its bound",
			envs: []Observed{failingProd(func(o *Observed) { o.Previous.RevertedDrySHAs = others })},
			now:  t0.Add(2 * time.Minute), creates: []string{RevertCommitName("p", "prod", bad)},
			reverted: append([]string{bad}, others[:rollbackv1alpha1.MaxRevertedDrySHAs-1]...), triggers: 1},
		{name: "the revert-again annotation: once more, under another name",
			envs: []Observed{failingProd(func(o *Observed) { o.Previous.RevertedDrySHAs, o.RevertAgain = []string{bad}, bad })},
			now:  t0.Add(2 * time.Minute), creates: []string{RevertCommitName(againPolicy("p"), "prod", bad)}, reverted: []string{bad}, triggers: 1},
		{name: "a healthy environment beside a failing one: only the failing one is reverted",
			envs: []Observed{staging(good), failingProd()}, now: t0.Add(2 * time.Minute),
			creates: []string{RevertCommitName("p", "prod", bad)}, reverted: []string{bad}, triggers: 1},
		{name: "a decision already counted is not counted again",
			envs: []Observed{failingProd(func(o *Observed) {
				o.Previous.RevertedDrySHAs = []string{bad}
				o.Previous.Message = Decide(*o, rules, t0.Add(2*time.Minute)).Status.Message
			})},
			now: t0.Add(2 * time.Minute), reverted: []string{bad}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pl := decide(observedPolicy(c.now, c.envs...))
			var names []string
			for _, cr := range pl.creates {
				names = append(names, cr.revertCommit.Name)
				assert.Equal(t, "prod", pl.environments[cr.env].Branch, "recorded on its own environment")
				assert.Equal(t, bad, cr.revertCommit.Spec.BadDrySHA)
				assert.Equal(t, good, cr.revertCommit.Spec.DrySHA, "back to the last healthy dry SHA")
				assert.Equal(t, "p", cr.revertCommit.Labels[rollbackv1alpha1.PolicyLabel])
			}
			assert.Equal(t, c.creates, names)
			prod := pl.environments[len(pl.environments)-1]
			assert.Equal(t, c.reverted, prod.RevertedDrySHAs)
			assert.Len(t, pl.triggers, c.triggers)
			assert.Equal(t, c.requeue, pl.requeueAfter)
			assert.Len(t, pl.environments, len(c.envs), "one status per selected environment, in order")
		})
	}
}
