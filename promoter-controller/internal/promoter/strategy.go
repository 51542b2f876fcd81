package promoter

import (
	"context"
	"errors"
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
	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/gate"
	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	commitstatuslisters "github.com/sluicehq/sluice/api/generated/listers/commitstatus/v1alpha1"
	gatinglisters "github.com/sluicehq/sluice/api/generated/listers/gating/v1alpha1"
	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/promotion"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// FieldManager is the field manager of every write.
const FieldManager = "promoter-controller"

// Event reasons.
const (
	EventPromotionStarted            = "PromotionStarted"
	EventPromotionBlocked            = "PromotionBlocked"
	EventPromotionCompleted          = "PromotionCompleted"
	EventPullRequestMergedExternally = "PullRequestMergedExternally"
	// ReasonInvalidConfiguration is the Stalled reason, and the Warning Event, of a spec or a
	// referenced object a person must fix.
	ReasonInvalidConfiguration = "InvalidConfiguration"
)

// reconcileTimeout bounds the git and SCM work of one reconcile.
const reconcileTimeout = 2 * time.Minute

// DefaultInterval is the fallback poll when spec.interval is not set.
const DefaultInterval = 5 * time.Minute

// StrategyReconciler promotes the proposed commits of a PromotionStrategy's environments.
type StrategyReconciler struct {
	Client         sluice.Interface
	Strategies     promoterlisters.PromotionStrategyLister
	PullRequests   promoterlisters.PullRequestLister
	Proposed       promoterlisters.ProposedCommitLister
	CommitStatuses commitstatuslisters.CommitStatusLister
	Gates          gatinglisters.GateLister
	Recorder       record.EventRecorder
	Metrics        *Metrics
	Log            *slog.Logger
	// PullRequestQueue receives the keys of open PullRequests after each fetch.
	PullRequestQueue handler.Enqueuer
	resolver         *resolver
	now              func() time.Time
}

// Reconcile implements controller.Reconciler.
func (r *StrategyReconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, controller.Permanent(err)
	}
	cur, err := r.Strategies.PromotionStrategies(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	ps := cur.DeepCopy()
	st := &ps.Status
	gen := ps.Generation
	interval := DefaultInterval
	if ps.Spec.Interval != nil && ps.Spec.Interval.Duration > 0 {
		interval = ps.Spec.Interval.Duration
	}

	s := suspend.Get(ps, ps.Spec.Suspend)
	suspend.Report(&st.Conditions, gen, s)
	if s.Suspended {
		st.ObservedGeneration = gen
		_, err := r.writeStatus(ctx, cur, ps)
		return controller.Result{}, err
	}
	conditions.Remove(&st.Conditions, conditions.Stalled)

	// A stalled remote must not hold a worker forever.
	opCtx, cancel := context.WithTimeout(ctx, reconcileTimeout)
	defer cancel()
	var later announcements
	res, err := r.promote(opCtx, ps, &later)
	if isConfigError(err) {
		// MarkStalled sets Ready=False too; nothing after it may remove Stalled.
		conditions.MarkStalled(&st.Conditions, gen, ReasonInvalidConfiguration, err.Error())
		st.ObservedGeneration = gen
		if _, werr := r.writeStatus(ctx, cur, ps); werr != nil {
			return controller.Result{}, werr
		}
		// Announced once per new problem, and only after the write that reports it succeeded.
		if was := conditions.Get(cur.Status.Conditions, conditions.Stalled); was == nil || was.Message != conditions.Get(st.Conditions, conditions.Stalled).Message {
			r.Recorder.Event(ps, corev1.EventTypeWarning, ReasonInvalidConfiguration, err.Error())
		}
		// Referenced objects are not all watched (Secrets): look again at the poll interval.
		return controller.Result{RequeueAfter: interval}, nil
	}
	if err != nil {
		conditions.MarkNotReady(&st.Conditions, gen, "PromotionFailed", err.Error())
		st.ObservedGeneration = gen
		if _, werr := r.writeStatus(ctx, cur, ps); werr != nil {
			r.Log.Info("cannot write status", "strategy", key, "error", werr)
		}
		return controller.Result{}, err
	}
	st.ObservedGeneration = gen
	if v, ok := ps.Annotations[promoterv1alpha1.RefreshAnnotation]; ok {
		st.LastHandledRefresh = v
	}
	written, err := r.writeStatus(ctx, cur, ps)
	if err != nil {
		return controller.Result{}, err
	}
	if written {
		// Only a status write that succeeded holds a new merge or block: one from a stale copy
		// conflicts, and the reconcile after it finds the record already there.
		later.run()
	}
	if res.RequeueAfter == 0 || res.RequeueAfter > interval {
		res.RequeueAfter = interval
	}
	return res, nil
}

// writeStatus writes ps's status unless it equals cur's, and says whether it wrote. The write
// carries cur's resourceVersion, so it fails with a conflict when cur was stale.
func (r *StrategyReconciler) writeStatus(ctx context.Context, cur, ps *promoterv1alpha1.PromotionStrategy) (bool, error) {
	if equality.Semantic.DeepEqual(cur.Status, ps.Status) {
		return false, nil
	}
	_, err := r.Client.PromoterV1alpha1().PromotionStrategies(ps.Namespace).UpdateStatus(ctx, ps, metav1.UpdateOptions{FieldManager: FieldManager})
	return err == nil, err
}

// announcements are the Events and metrics of a state change, made once the status write that
// records the change succeeded.
type announcements []func()

func (a *announcements) add(f func()) { *a = append(*a, f) }

func (a announcements) run() {
	for _, f := range a {
		f()
	}
}

// envPlan is one environment as this reconcile sees it.
type envPlan struct {
	spec     promoterv1alpha1.Environment
	status   promoterv1alpha1.EnvironmentStatus
	rules    promotion.Environment
	proposed string
	verdict  promotion.Verdict
}

func (r *StrategyReconciler) promote(ctx context.Context, ps *promoterv1alpha1.PromotionStrategy, later *announcements) (controller.Result, error) {
	spec := ps.Spec
	gen := ps.Generation
	branches := make([]string, len(spec.Environments))
	after := make([][]string, len(spec.Environments))
	for i, e := range spec.Environments {
		branches[i], after[i] = e.Branch, e.After
	}
	graph, err := promotion.NewGraph(branches, after)
	if err != nil {
		return controller.Result{}, &configError{"spec.environments: " + err.Error()}
	}
	suffix := spec.ProposedBranchSuffix
	if suffix == "" {
		suffix = promoterv1alpha1.DefaultProposedBranchSuffix
	}

	repo, err := r.resolver.resolve(ctx, ps.Namespace, spec.RepositoryRef.Name)
	if err != nil {
		return controller.Result{}, err
	}
	refs := []string{spec.DryBranch}
	for _, b := range branches {
		refs = append(refs, b, b+suffix)
	}
	start := time.Now()
	err = repo.git.Fetch(ctx, refs...)
	r.Metrics.observeGit("fetch", start, err)
	var missing *git.BranchNotFoundError
	if err != nil && !errors.As(err, &missing) {
		if errors.Is(err, git.ErrAuthentication) || errors.Is(err, git.ErrRepositoryNotFound) || errors.Is(err, git.ErrUnknownHostKey) || errors.Is(err, git.ErrHostKeyMismatch) {
			return controller.Result{}, &configError{fmt.Sprintf("fetch %s: %v", repo.git.URL(), err)}
		}
		return controller.Result{}, fmt.Errorf("fetch %s: %w", repo.git.URL(), err)
	}
	now := metav1.NewTime(r.now())
	ps.Status.LastFetchTime = &now
	if _, err := repo.git.Resolve(spec.DryBranch); err != nil {
		return controller.Result{}, &configError{fmt.Sprintf("dry branch %q is not in %s: push it, or fix spec.dryBranch", spec.DryBranch, repo.git.URL())}
	}

	previous := map[string]promoterv1alpha1.EnvironmentStatus{}
	for _, e := range ps.Status.Environments {
		previous[e.Branch] = e
	}
	statuses := r.statusIndex(ps.Namespace, spec.RepositoryRef.Name)
	plans := make([]*envPlan, len(spec.Environments))
	rulesEnvs := make([]promotion.Environment, len(spec.Environments))
	for i, e := range spec.Environments {
		p := &envPlan{spec: e, status: previous[e.Branch]}
		p.status.Branch = e.Branch
		active, _ := repo.git.Resolve(e.Branch)
		p.proposed, _ = repo.git.Resolve(e.Branch + suffix)
		p.status.Active = describe(repo.git, active)
		p.status.Proposed = describe(repo.git, p.proposed)
		activeChecks := statuses.checks(keys(spec.ActiveCommitStatuses, e.ActiveCommitStatuses), active)
		proposedChecks := statuses.checks(keys(spec.ProposedCommitStatuses, e.ProposedCommitStatuses), p.proposed)
		p.status.Active.CommitStatuses, p.status.Active.Phase = phases(activeChecks), phaseIf(active, activeChecks)
		p.status.Proposed.CommitStatuses, p.status.Proposed.Phase = phases(proposedChecks), phaseIf(p.proposed, proposedChecks)
		p.rules = promotion.Environment{
			Branch:         e.Branch,
			Active:         promotion.Commit{DrySHA: p.status.Active.DrySHA, HydratedSHA: active},
			Proposed:       promotion.Commit{DrySHA: p.status.Proposed.DrySHA, HydratedSHA: p.proposed},
			ActiveChecks:   activeChecks,
			ProposedChecks: proposedChecks,
		}
		if p.proposed != "" && active != "" {
			if merged, err := repo.git.IsAncestor(p.proposed, active); err == nil && merged {
				p.rules.Proposed = p.rules.Active
			}
		}
		if e.Gates != nil {
			p.rules.Gates = r.gates(ps.Namespace, e.Gates)
		}
		if active != "" && promotion.Aggregate(activeChecks) == promotion.Success {
			p.status.LastHealthyDrySHAs = promotion.RecordHealthy(p.status.LastHealthyDrySHAs, p.status.Active.DrySHA, active, r.now())
		}
		plans[i], rulesEnvs[i] = p, p.rules
	}

	order := dryOrder{repo: repo.git, branch: spec.DryBranch}
	var merging, blocked, waiting []string
	for i, p := range plans {
		p.verdict = promotion.Evaluate(graph, rulesEnvs, i, order)
		p.status.Eligible = p.verdict.Eligible
		msg := p.verdict.Message()
		// Compared as stored: a message longer than the status keeps would otherwise look new on
		// every pass and repeat the Event.
		if msg != "" && truncate(msg, 1024) != previous[p.spec.Branch].Blocked {
			rules := p.verdict.Rules()
			branch, proposed := p.spec.Branch, p.proposed
			later.add(func() {
				r.Recorder.Eventf(ps, corev1.EventTypeNormal, EventPromotionBlocked, "%s: %s blocked by %s: %s", branch, shortSHA(proposed), rules[0], msg)
				for _, rule := range uniqueRules(rules) {
					r.Metrics.blocked.WithLabelValues(ps.Namespace, ps.Name, branch, string(rule)).Inc()
				}
			})
		}
		p.status.Blocked = truncate(msg, 1024)
		state, err := r.syncPullRequest(ctx, ps, repo, suffix, p, later)
		if err != nil {
			return controller.Result{}, err
		}
		if err := r.syncProposedCommit(ctx, ps, p, suffix); err != nil {
			return controller.Result{}, err
		}
		switch {
		case state == "merging":
			merging = append(merging, p.spec.Branch)
		case p.verdict.Proposed && !p.verdict.Eligible:
			blocked = append(blocked, p.spec.Branch)
		case p.verdict.Proposed:
			waiting = append(waiting, p.spec.Branch)
		}
	}

	ps.Status.Environments = make([]promoterv1alpha1.EnvironmentStatus, len(plans))
	for i, p := range plans {
		ps.Status.Environments[i] = p.status
	}
	summary := summarize(plans)
	switch {
	case len(merging) > 0:
		conditions.MarkReconciling(&ps.Status.Conditions, gen, "Promoting", "merging into "+strings.Join(merging, ", "))
		conditions.MarkNotReady(&ps.Status.Conditions, gen, "Promoting", summary)
	default:
		conditions.Remove(&ps.Status.Conditions, conditions.Reconciling)
		reason := "Promoted"
		if len(blocked) > 0 {
			reason = "Blocked"
			summary += "; blocked: " + strings.Join(blocked, ", ")
		}
		if len(waiting) > 0 {
			reason = "WaitingForMerge"
			summary += "; waiting for a merge: " + strings.Join(waiting, ", ")
		}
		conditions.MarkReady(&ps.Status.Conditions, gen, reason, summary)
	}
	return controller.Result{}, nil
}

// summarize says which dry commit each environment runs.
func summarize(plans []*envPlan) string {
	parts := make([]string, len(plans))
	for i, p := range plans {
		parts[i] = p.spec.Branch + "@" + orDash(shortSHA(p.status.Active.DrySHA))
	}
	return strings.Join(parts, " ")
}

func (r *StrategyReconciler) gates(ns string, sel *promoterv1alpha1.GateSelector) *promotion.GateVerdict {
	refs := make([]gate.Ref, len(sel.Refs))
	for i, g := range sel.Refs {
		refs[i] = gate.Ref{Namespace: g.Namespace, Name: g.Name}
		if refs[i].Namespace == "" {
			refs[i].Namespace = ns
		}
	}
	require, err := gate.ParseRequire(sel.Require)
	if err != nil {
		return &promotion.GateVerdict{Message: err.Error()}
	}
	v := gate.Allows(refs, require, func(namespace, name string) (*gatingv1alpha1.Gate, error) {
		return r.Gates.Gates(namespace).Get(name)
	})
	return &promotion.GateVerdict{Allowed: v.Allowed, Message: v.Message}
}

// statusIndex maps key -> sha -> phases of the CommitStatuses of one repository.
type statusIndex map[string]map[string][]promotion.Phase

func (r *StrategyReconciler) statusIndex(ns, repo string) statusIndex {
	sel, _ := labels.Parse(commitstatusv1alpha1.KeyLabel)
	list, _ := r.CommitStatuses.CommitStatuses(ns).List(sel)
	idx := statusIndex{}
	for _, cs := range list {
		if cs.Spec.RepositoryRef.Name != repo {
			continue
		}
		k := cs.Labels[commitstatusv1alpha1.KeyLabel]
		if idx[k] == nil {
			idx[k] = map[string][]promotion.Phase{}
		}
		idx[k][cs.Spec.SHA] = append(idx[k][cs.Spec.SHA], cs.Spec.Phase)
	}
	return idx
}

func (idx statusIndex) checks(keys []string, sha string) []promotion.Check {
	out := make([]promotion.Check, len(keys))
	for i, k := range keys {
		out[i] = promotion.Check{Key: k, Phase: promotion.KeyPhase(idx[k][sha])}
		if sha == "" || len(idx[k][sha]) == 0 {
			out[i].Phase = ""
		}
	}
	return out
}

func keys(lists ...[]promoterv1alpha1.CommitStatusSelector) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range lists {
		for _, s := range l {
			if !seen[s.Key] {
				seen[s.Key] = true
				out = append(out, s.Key)
			}
		}
	}
	return out
}

func phases(checks []promotion.Check) []promoterv1alpha1.CommitStatusPhase {
	if len(checks) == 0 {
		return nil
	}
	out := make([]promoterv1alpha1.CommitStatusPhase, len(checks))
	for i, c := range checks {
		p := c.Phase
		if p == "" {
			p = promotion.Pending
		}
		out[i] = promoterv1alpha1.CommitStatusPhase{Key: c.Key, Phase: p}
	}
	return out
}

func phaseIf(sha string, checks []promotion.Check) commitstatusv1alpha1.CommitStatusPhase {
	if sha == "" {
		return ""
	}
	return promotion.Aggregate(checks)
}

func uniqueRules(rules []promotion.Rule) []promotion.Rule {
	var out []promotion.Rule
	seen := map[promotion.Rule]bool{}
	for _, r := range rules {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

func shortSHA(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
