// Package rollbackpolicy reconciles RollbackPolicies: it watches the active commit statuses of
// the environments a policy selects and, when one stays in failure long enough soon enough after
// a promotion, creates the RevertCommit that rolls the environment back.
//
// The RevertCommit's name is derived from the policy, the environment and the bad dry SHA, so a
// restart that repeats a create finds the first one, and a bad dry SHA is never reverted twice.
package rollbackpolicy

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	commitstatuslisters "github.com/sluicehq/sluice/api/generated/listers/commitstatus/v1alpha1"
	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	rollbacklisters "github.com/sluicehq/sluice/api/generated/listers/rollback/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/rollback-controller/internal/metrics"
)

// FieldManager is the field manager of every write.
const FieldManager = "rollback-controller"

// EventRevertCommitCreated is the Event on a policy that fired.
const EventRevertCommitCreated = "RevertCommitCreated"

// Reconciler reconciles RollbackPolicies.
type Reconciler struct {
	Client         sluice.Interface
	Policies       rollbacklisters.RollbackPolicyLister
	Strategies     promoterlisters.PromotionStrategyLister
	CommitStatuses commitstatuslisters.CommitStatusLister
	RevertCommits  rollbacklisters.RevertCommitLister
	Recorder       record.EventRecorder
	Metrics        *metrics.Rollbacks
	Log            *slog.Logger
	// PeersReady reports whether the promoter and commit-status CRDs are served and watched.
	PeersReady     func() bool
	StalledRecheck time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

type policyStall struct{ reason, message string }

func (s *policyStall) Error() string { return s.message }

// Reconcile implements controller.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, controller.Permanent(err)
	}
	cur, err := r.Policies.RollbackPolicies(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	p := cur.DeepCopy()
	st, gen := &p.Status, p.Generation
	st.ObservedGeneration = gen
	s := suspend.Get(p, p.Spec.Suspend)
	suspend.Report(&st.Conditions, gen, s)
	if s.Suspended {
		return controller.Result{}, r.write(ctx, cur, p)
	}
	if r.PeersReady != nil && !r.PeersReady() {
		conditions.MarkStalled(&st.Conditions, gen, "PeerCRDsMissing",
			"the promoter.sluice.dev, commitstatus.sluice.dev and scm.sluice.dev CRDs must be installed for a RollbackPolicy to watch anything: install the promoter-controller chart, or this chart with its crds/")
		return controller.Result{RequeueAfter: r.StalledRecheck}, r.write(ctx, cur, p)
	}
	res, announce, err := r.evaluate(ctx, p)
	if ps, ok := err.(*policyStall); ok {
		conditions.MarkStalled(&st.Conditions, gen, ps.reason, ps.message)
		return controller.Result{}, r.write(ctx, cur, p)
	}
	if err != nil {
		conditions.MarkNotReady(&st.Conditions, gen, "Retrying", err.Error())
		if werr := r.write(ctx, cur, p); werr != nil {
			r.Log.Info("cannot write status", "rollbackpolicy", key, "error", werr)
		}
		return controller.Result{}, err
	}
	if err := r.write(ctx, cur, p); err != nil {
		return controller.Result{}, err
	}
	for _, f := range announce {
		f()
	}
	return res, nil
}

// evaluate decides every selected environment, creates the RevertCommits that are due, and
// fills the status. The returned functions announce what was done, once the status is written.
func (r *Reconciler) evaluate(ctx context.Context, p *rollbackv1alpha1.RollbackPolicy) (controller.Result, []func(), error) {
	ps, envs, err := r.selected(p)
	if err != nil {
		return controller.Result{}, nil, err
	}
	previous := map[string]rollbackv1alpha1.PolicyEnvironmentStatus{}
	for _, e := range p.Status.Environments {
		previous[e.Branch] = e
	}
	reverts, _ := r.RevertCommits.RevertCommits(p.Namespace).List(labels.Everything())
	rules := rulesOf(p.Spec)
	now := r.now()
	var res controller.Result
	var announce []func()
	var summary []string
	out := make([]rollbackv1alpha1.PolicyEnvironmentStatus, 0, len(envs))
	for _, env := range envs {
		v := Decide(Observed{
			Env: env, Failure: r.failure(ps, env, p.Spec.Trigger.CommitStatuses), Previous: previous[env.Branch],
			Reverts: revertsOf(reverts, ps.Name, env.Branch), Policy: p.Name,
		}, rules, now)
		if v.Fire != nil {
			rc, err := r.fire(ctx, p, ps, env.Branch, v.Fire)
			if err != nil {
				return controller.Result{}, nil, err
			}
			v.Status.LastRollback = &rollbackv1alpha1.PolicyRollback{RevertCommit: rc.Name, BadDrySHA: v.Fire.BadDrySHA, Time: rc.CreationTimestamp}
			v.Status.RevertedDrySHAs = prepend(v.Status.RevertedDrySHAs, v.Fire.BadDrySHA)
			announce = append(announce, r.announceFire(p, env.Branch, rc))
		}
		if v.Decision != "" && v.Decision != DecisionWaiting && changed(previous[env.Branch], v.Status) {
			labels := []string{p.Namespace, ps.Name, env.Branch, v.Decision}
			announce = append(announce, func() { r.Metrics.PolicyTriggers.WithLabelValues(labels...).Inc() })
		}
		if v.RequeueAfter > 0 && (res.RequeueAfter == 0 || v.RequeueAfter < res.RequeueAfter) {
			res.RequeueAfter = v.RequeueAfter
		}
		v.Status.Message = truncate(v.Status.Message, 1024)
		out = append(out, v.Status)
		summary = append(summary, env.Branch+": "+v.Status.Message)
	}
	p.Status.Environments = out
	conditions.MarkReady(&p.Status.Conditions, p.Generation, "Watching", strings.Join(summary, "; "))
	return res, announce, nil
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

func (r *Reconciler) write(ctx context.Context, cur, p *rollbackv1alpha1.RollbackPolicy) error {
	if equality.Semantic.DeepEqual(cur.Status, p.Status) {
		return nil
	}
	_, err := r.Client.RollbackV1alpha1().RollbackPolicies(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: FieldManager})
	return err
}

func (r *Reconciler) announceFire(p *rollbackv1alpha1.RollbackPolicy, env string, rc *rollbackv1alpha1.RevertCommit) func() {
	return func() {
		r.Recorder.Eventf(p, corev1.EventTypeWarning, EventRevertCommitCreated, "%s: created RevertCommit %s: %s", env, rc.Name, rc.Spec.Reason)
	}
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
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

// changed tells a new decision from one already counted: the message carries it.
func changed(before, after rollbackv1alpha1.PolicyEnvironmentStatus) bool {
	return before.Message != after.Message
}

func prepend(list []string, sha string) []string {
	out := append([]string{sha}, list...)
	if len(out) > rollbackv1alpha1.MaxRevertedDrySHAs {
		out = out[:rollbackv1alpha1.MaxRevertedDrySHAs]
	}
	return out
}
