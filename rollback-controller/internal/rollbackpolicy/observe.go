package rollbackpolicy

import (
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

// observation is what one reconcile reads: the policy, its strategy and, for each selected
// environment in the policy's order, what Decide needs.
type observation struct {
	policy   *rollbackv1alpha1.RollbackPolicy
	strategy *promoterv1alpha1.PromotionStrategy
	envs     []Observed
	rules    Rules
	now      time.Time
}

// observe reads every selected environment before anything is decided or created.
func (r *Reconciler) observe(p *rollbackv1alpha1.RollbackPolicy) (observation, error) {
	ps, envs, err := r.selected(p)
	if err != nil {
		return observation{}, err
	}
	previous := map[string]rollbackv1alpha1.PolicyEnvironmentStatus{}
	for _, e := range p.Status.Environments {
		previous[e.Branch] = e
	}
	reverts, _ := r.RevertCommits.RevertCommits(p.Namespace).List(labels.Everything())
	o := observation{policy: p, strategy: ps, rules: rulesOf(p.Spec), now: r.Clock.Now()}
	for _, env := range envs {
		o.envs = append(o.envs, Observed{
			Env: env, Failure: r.failure(ps, env, p.Spec.Trigger.CommitStatuses), Previous: previous[env.Branch],
			Reverts: revertsOf(reverts, ps.Name, env.Branch), Policy: p.Name, RevertAgain: p.Annotations[rollbackv1alpha1.RevertAgainAnnotation],
		})
	}
	return o, nil
}

// selected returns the strategy and the status of each selected environment.
func (r *Reconciler) selected(p *rollbackv1alpha1.RollbackPolicy) (*promoterv1alpha1.PromotionStrategy, []promoterv1alpha1.EnvironmentStatus, error) {
	name := p.Spec.PromotionStrategyRef.Name
	ps, err := r.Strategies.PromotionStrategies(p.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil, &policyStall{"PromotionStrategyNotFound", fmt.Sprintf(
			"PromotionStrategy %q does not exist in namespace %q: create it, or fix spec.promotionStrategyRef", name, p.Namespace)}
	}
	if err != nil {
		return nil, nil, err
	}
	byBranch := map[string]promoterv1alpha1.EnvironmentStatus{}
	var all []string
	for _, e := range ps.Spec.Environments {
		all = append(all, e.Branch)
		byBranch[e.Branch] = promoterv1alpha1.EnvironmentStatus{Branch: e.Branch}
	}
	for _, e := range ps.Status.Environments {
		if _, ok := byBranch[e.Branch]; ok {
			byBranch[e.Branch] = e
		}
	}
	want := p.Spec.Environments
	if len(want) == 0 {
		want = all
	}
	envs := make([]promoterv1alpha1.EnvironmentStatus, 0, len(want))
	for _, b := range want {
		e, ok := byBranch[b]
		if !ok {
			return nil, nil, &policyStall{"EnvironmentNotFound", fmt.Sprintf(
				"PromotionStrategy %q has no environment %q (it has %s): fix spec.environments", name, b, strings.Join(all, ", "))}
		}
		envs = append(envs, e)
	}
	return ps, envs, nil
}

// failure is the first of keys failing on the environment's active commit.
func (r *Reconciler) failure(ps *promoterv1alpha1.PromotionStrategy, env promoterv1alpha1.EnvironmentStatus, keys []rollbackv1alpha1.CommitStatusKey) *Failure {
	sha := env.Active.HydratedSHA
	if sha == "" {
		return nil
	}
	for _, k := range keys {
		sel := labels.SelectorFromSet(labels.Set{commitstatusv1alpha1.KeyLabel: k.Key})
		list, _ := r.CommitStatuses.CommitStatuses(ps.Namespace).List(sel)
		for _, cs := range list {
			if cs.Spec.SHA == sha && cs.Spec.RepositoryRef.Name == ps.Spec.RepositoryRef.Name && cs.Spec.Phase == commitstatusv1alpha1.CommitStatusFailure {
				desc := cs.Spec.Description
				if desc == "" {
					desc = cs.Spec.Name
				}
				return &Failure{Key: k.Key, Description: desc}
			}
		}
	}
	return nil
}

func rulesOf(s rollbackv1alpha1.RollbackPolicySpec) Rules {
	rules := Rules{Threshold: time.Minute, Window: time.Hour, Cooldown: time.Hour}
	if d := s.Trigger.FailureThreshold; d != nil {
		rules.Threshold = d.Duration
	}
	if d := s.Trigger.Window; d != nil {
		rules.Window = d.Duration
	}
	if d := s.Cooldown; d != nil {
		rules.Cooldown = d.Duration
	}
	return rules
}

func revertsOf(all []*rollbackv1alpha1.RevertCommit, strategy, env string) []*rollbackv1alpha1.RevertCommit {
	var out []*rollbackv1alpha1.RevertCommit
	for _, rc := range all {
		if rc.Spec.PromotionStrategyRef.Name == strategy && rc.Spec.ActiveBranch == env {
			out = append(out, rc)
		}
	}
	return out
}
