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
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	commitstatuslisters "github.com/sluicehq/sluice/api/generated/listers/commitstatus/v1alpha1"
	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	rollbacklisters "github.com/sluicehq/sluice/api/generated/listers/rollback/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/pkg/text"
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
	// PeerCRDs reports whether the CRDs of other Sluice charts that policies read are served and
	// watched, and when not, which are missing and which chart installs them. nil means they are.
	PeerCRDs       func() (ready bool, missing string)
	StalledRecheck time.Duration
	// Clock is the time: the manager's in a process, a fake one in tests.
	Clock clock.PassiveClock
}

// ReasonPeerCRDsMissing is the Stalled reason of a policy whose peer CRDs are not installed.
const ReasonPeerCRDsMissing = "PeerCRDsMissing"

type policyStall struct{ reason, message string }

func (s *policyStall) Error() string { return s.message }

// policyStatus writes RollbackPolicy status. The status carries what earlier reconciles
// decided (when a failure began, the dry SHAs reverted), so one decided from a stale copy must not
// land: the conflict re-runs the reconcile from the live object instead.
var policyStatus = reconcile.StatusWriter[*rollbackv1alpha1.RollbackPolicy, rollbackv1alpha1.RollbackPolicyStatus]{
	Kind: "RollbackPolicy", FieldManager: FieldManager, ReturnConflicts: true,
	Status: func(p *rollbackv1alpha1.RollbackPolicy) *rollbackv1alpha1.RollbackPolicyStatus { return &p.Status },
}

// Reconcile implements controller.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	l, found, err := reconcile.Load(key, r.get, func(p *rollbackv1alpha1.RollbackPolicy) bool { return p.Spec.Suspend })
	if !found || err != nil {
		return controller.Result{}, err
	}
	cur, p := l.Cached, l.Next
	st, gen := &p.Status, p.Generation
	st.ObservedGeneration = gen
	if l.ReportSuspend(&st.Conditions) {
		return controller.Result{}, r.write(ctx, cur, p, nil)
	}
	if ready, missing := r.peers(); !ready {
		conditions.MarkStalled(&st.Conditions, gen, ReasonPeerCRDsMissing,
			"a RollbackPolicy reads PromotionStrategies (promoter.sluice.dev) and CommitStatuses (commitstatus.sluice.dev): "+missing)
		return controller.Result{RequeueAfter: r.StalledRecheck}, r.write(ctx, cur, p, nil)
	}
	res, announce, err := r.evaluate(ctx, p)
	if ps, ok := err.(*policyStall); ok {
		conditions.MarkStalled(&st.Conditions, gen, ps.reason, ps.message)
		return controller.Result{}, r.write(ctx, cur, p, nil)
	}
	if err != nil {
		conditions.MarkNotReady(&st.Conditions, gen, "Retrying", err.Error())
		if werr := r.write(ctx, cur, p, nil); werr != nil {
			r.Log.Info("cannot write status", "rollbackpolicy", key, "error", werr)
		}
		return controller.Result{}, err
	}
	return res, r.write(ctx, cur, p, announce)
}

func (r *Reconciler) get(namespace, name string) (*rollbackv1alpha1.RollbackPolicy, error) {
	return r.Policies.RollbackPolicies(namespace).Get(name)
}

// peers reports whether the CRDs of other charts are served and watched, and if not, what to do.
func (r *Reconciler) peers() (bool, string) {
	if r.PeerCRDs == nil {
		return true, ""
	}
	return r.PeerCRDs()
}

// write stores the status when it changed and then announces what the reconcile did: only after
// a write this call made, so a RevertCommit created once is announced once.
func (r *Reconciler) write(ctx context.Context, cur, p *rollbackv1alpha1.RollbackPolicy, announce []func()) error {
	_, wrote, err := policyStatus.Write(ctx, r.Client.RollbackV1alpha1().RollbackPolicies(cur.Namespace), cur, p)
	if err != nil || !wrote {
		return err
	}
	for _, f := range announce {
		f()
	}
	return nil
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
	now := r.Clock.Now()
	var res controller.Result
	var announce []func()
	var summary []string
	out := make([]rollbackv1alpha1.PolicyEnvironmentStatus, 0, len(envs))
	for _, env := range envs {
		v := Decide(Observed{
			Env: env, Failure: r.failure(ps, env, p.Spec.Trigger.CommitStatuses), Previous: previous[env.Branch],
			Reverts: revertsOf(reverts, ps.Name, env.Branch), Policy: p.Name, RevertAgain: p.Annotations[rollbackv1alpha1.RevertAgainAnnotation],
		}, rules, now)
		if v.Fire != nil {
			rc, err := r.fire(ctx, p, ps, env.Branch, v.Fire)
			if err != nil {
				return controller.Result{}, nil, err
			}
			v.Status.LastRollback = &rollbackv1alpha1.PolicyRollback{RevertCommit: rc.Name, BadDrySHA: v.Fire.BadDrySHA, Time: rc.CreationTimestamp}
			if !slices.Contains(v.Status.RevertedDrySHAs, v.Fire.BadDrySHA) {
				v.Status.RevertedDrySHAs = prepend(v.Status.RevertedDrySHAs, v.Fire.BadDrySHA)
			}
			announce = append(announce, r.announceFire(p, env.Branch, rc))
		}
		if v.Decision != "" && v.Decision != DecisionWaiting && changed(previous[env.Branch], v.Status) {
			labels := []string{p.Namespace, ps.Name, env.Branch, v.Decision}
			announce = append(announce, func() { r.Metrics.PolicyTriggers.WithLabelValues(labels...).Inc() })
		}
		if v.RequeueAfter > 0 && (res.RequeueAfter == 0 || v.RequeueAfter < res.RequeueAfter) {
			res.RequeueAfter = v.RequeueAfter
		}
		v.Status.Message = text.Truncate(v.Status.Message, 1024)
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

func (r *Reconciler) announceFire(p *rollbackv1alpha1.RollbackPolicy, env string, rc *rollbackv1alpha1.RevertCommit) func() {
	return func() {
		r.Recorder.Eventf(p, corev1.EventTypeWarning, EventRevertCommitCreated, "%s: created RevertCommit %s: %s", env, rc.Name, rc.Spec.Reason)
	}
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
