package promotionstrategy

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/promotion"
	"github.com/sluicehq/sluice/promoter-controller/internal/repository"
)

// observation is everything one reconcile knows, read once before anything is decided.
type observation struct {
	// Strategy is the copy the reconcile started from.
	Strategy *promoterv1alpha1.PromotionStrategy
	Graph    *promotion.Graph
	Now      time.Time
	Envs     []environment
	// Order holds every comparison of dry commits the rules need.
	Order dryOrder
	// Fetched is true when this reconcile fetched the repository: git may have moved.
	Fetched bool
}

// environment is one environment as git, its PullRequest and the cluster show it.
type environment struct {
	Spec promoterv1alpha1.Environment
	// Active and Proposed describe the tips of the environment and proposed branches; an empty
	// HydratedSHA means the branch does not exist.
	Active, Proposed promoterv1alpha1.CommitState
	// ProposedMerged is true when the environment branch already holds the proposed commit.
	ProposedMerged bool
	ActiveChecks   []promotion.Check
	ProposedChecks []promotion.Check
	// Gates is nil when the environment has no gates.
	Gates *promotion.GateVerdict
	Holds []promotion.Hold
	// PullRequest is the environment's PullRequest, read live; nil when there is none.
	PullRequest *promoterv1alpha1.PullRequest
	// Merged is the dry commit of PullRequest's merged head, when it is merged.
	Merged *mergedCommit
	// ProposedCommit is the environment's ProposedCommit; nil when there is none.
	ProposedCommit *promoterv1alpha1.ProposedCommit
}

// mergedCommit is what a merged PullRequest brought: the dry commit and when it was made.
type mergedCommit struct {
	DrySHA string
	// DryTime is zero when the dry commit is not in the cache.
	DryTime time.Time
}

// environmentGraph checks the spec's order of environments; an error is for a person to fix.
func environmentGraph(spec promoterv1alpha1.PromotionStrategySpec) (*promotion.Graph, error) {
	branches := make([]string, len(spec.Environments))
	after := make([][]string, len(spec.Environments))
	for i, e := range spec.Environments {
		branches[i], after[i] = e.Branch, e.After
	}
	g, err := promotion.NewGraph(branches, after)
	if err != nil {
		return nil, repository.Configf("spec.environments: %v", err)
	}
	return g, nil
}

func proposedSuffix(spec promoterv1alpha1.PromotionStrategySpec) string {
	if spec.ProposedBranchSuffix == "" {
		return promoterv1alpha1.DefaultProposedBranchSuffix
	}
	return spec.ProposedBranchSuffix
}

// observe fetches the repository and reads every environment.
func (r *Reconciler) observe(ctx context.Context, ps *promoterv1alpha1.PromotionStrategy, graph *promotion.Graph) (*observation, error) {
	repo, err := r.Repositories.Resolve(ctx, ps.Namespace, ps.Spec.RepositoryRef.Name)
	if err != nil {
		return nil, err
	}
	fetched := r.Fetches.due(ps, repo.Git.URL(), r.Clock.Now())
	if fetched {
		if err := r.fetchFor(ctx, repo.Git, ps); err != nil {
			return nil, err
		}
	} else if _, err := repo.Git.Resolve(ps.Spec.DryBranch); err != nil {
		// The last fetch found it; only a fetch can say whether it went away since.
		fetched = true
		if err := r.fetchFor(ctx, repo.Git, ps); err != nil {
			return nil, err
		}
	}
	o, err := r.observeEnvironments(ctx, repo.Git, ps, graph)
	if err != nil || fetched || !mergedElsewhere(repo.Git, o.Envs) {
		if o != nil {
			o.Fetched = fetched
		}
		return o, err
	}
	// A PullRequest merged on the SCM, which the cache has not seen: git moved after all.
	if err := r.fetchFor(ctx, repo.Git, ps); err != nil {
		return nil, err
	}
	o, err = r.observeEnvironments(ctx, repo.Git, ps, graph)
	if o != nil {
		o.Fetched = true
	}
	return o, err
}

// fetchFor fetches the strategy's branches and records the fetch with Fetches.
func (r *Reconciler) fetchFor(ctx context.Context, repo *git.Repository, ps *promoterv1alpha1.PromotionStrategy) error {
	start := r.Clock.Now()
	if err := r.fetch(ctx, repo, ps.Spec); err != nil {
		return err
	}
	r.Fetches.done(ps, repo.URL(), start)
	return nil
}

// observeEnvironments reads every environment from the cache and the cluster.
func (r *Reconciler) observeEnvironments(ctx context.Context, repo *git.Repository, ps *promoterv1alpha1.PromotionStrategy, graph *promotion.Graph) (*observation, error) {
	o := &observation{Strategy: ps, Graph: graph, Now: r.Clock.Now()}
	statuses := r.statusIndex(ps.Namespace, ps.Spec.RepositoryRef.Name)
	for _, e := range ps.Spec.Environments {
		env, err := r.observeEnvironment(ctx, repo, ps, e, statuses)
		if err != nil {
			return nil, err
		}
		o.Envs = append(o.Envs, env)
	}
	o.Order = compareDryCommits(repo, ps.Spec.DryBranch, graph, o.Envs)
	return o, nil
}

// mergedElsewhere reports whether a PullRequest says it merged a head that the cached
// environment branch does not hold: the merge happened on the SCM, after the last fetch.
func mergedElsewhere(repo *git.Repository, envs []environment) bool {
	for _, e := range envs {
		pr := e.PullRequest
		if pr == nil || pr.Status.State != promoterv1alpha1.PullRequestMerged || pr.Status.MergedHeadSHA == "" {
			continue
		}
		if e.Active.HydratedSHA == "" {
			return true
		}
		if held, err := repo.IsAncestor(pr.Status.MergedHeadSHA, e.Active.HydratedSHA); err != nil || !held {
			return true
		}
	}
	return false
}

// fetch brings the dry, environment and proposed branches up to date in the cache.
func (r *Reconciler) fetch(ctx context.Context, repo *git.Repository, spec promoterv1alpha1.PromotionStrategySpec) error {
	refs := []string{spec.DryBranch}
	for _, e := range spec.Environments {
		refs = append(refs, e.Branch, e.Branch+proposedSuffix(spec))
	}
	start := time.Now()
	err := repo.Fetch(ctx, refs...)
	r.Metrics.ObserveGit("fetch", start, err)
	var missing *git.BranchNotFoundError
	switch {
	case err != nil && errors.As(err, &missing):
		// An environment without a proposed branch yet is normal; a missing dry branch is not.
	case errors.Is(err, git.ErrAuthentication), errors.Is(err, git.ErrRepositoryNotFound), errors.Is(err, git.ErrUnknownHostKey), errors.Is(err, git.ErrHostKeyMismatch):
		return repository.Configf("fetch %s: %v", repo.URL(), err)
	case err != nil:
		return fmt.Errorf("fetch %s: %w", repo.URL(), err)
	}
	if _, err := repo.Resolve(spec.DryBranch); err != nil {
		return repository.Configf("dry branch %q is not in %s: push it, or fix spec.dryBranch", spec.DryBranch, repo.URL())
	}
	return nil
}

func (r *Reconciler) observeEnvironment(ctx context.Context, repo *git.Repository, ps *promoterv1alpha1.PromotionStrategy, e promoterv1alpha1.Environment, statuses statusIndex) (environment, error) {
	env := environment{Spec: e}
	active, _ := repo.Resolve(e.Branch)
	proposed, _ := repo.Resolve(e.Branch + proposedSuffix(ps.Spec))
	env.Active, env.Proposed = repository.Describe(repo, active), repository.Describe(repo, proposed)
	if proposed != "" && active != "" {
		env.ProposedMerged, _ = repo.IsAncestor(proposed, active)
	}
	env.ActiveChecks = statuses.checks(statusKeys(ps.Spec.ActiveCommitStatuses, e.ActiveCommitStatuses), active)
	env.ProposedChecks = statuses.checks(statusKeys(ps.Spec.ProposedCommitStatuses, e.ProposedCommitStatuses), proposed)
	if e.Gates != nil {
		env.Gates = r.gates(ps.Namespace, e.Gates, env.Proposed.DrySHA)
	}
	holds, err := r.Holds.For(ps.Namespace, ps.Name, e.Branch)
	if err != nil {
		return env, err
	}
	env.Holds = holds
	name := objectName(ps.Name, e.Branch)
	if env.PullRequest, err = r.pullRequest(ctx, ps.Namespace, name, ruleInput(env).HasProposal()); err != nil {
		return env, err
	}
	if pr := env.PullRequest; pr != nil && pr.Status.State == promoterv1alpha1.PullRequestMerged {
		env.Merged = mergedDry(repo, pr.Status.MergedHeadSHA)
	}
	env.ProposedCommit, err = r.ProposedCommits.ProposedCommits(ps.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		env.ProposedCommit, err = nil, nil
	}
	return env, err
}

// pullRequest reads an environment's PullRequest from the cache, and live only when the cache
// has none and the environment proposes a change: right after a create the cache may not have
// it yet, and a create is decided only on a live "not found". An environment with nothing
// proposed creates nothing, so its cache miss is final (the PullRequest's own event brings the
// strategy back if the cache was behind). A PullRequest the cache holds may be behind the API
// server; every write decided on it is safe all the same (an update carries its resourceVersion,
// a replacement its UID precondition) and a conflict is retried on a newer read. Reading live on
// every reconcile cost 3 GETs per reconcile of a 3-environment strategy, over a third of a
// wave's API calls.
func (r *Reconciler) pullRequest(ctx context.Context, ns, name string, proposes bool) (*promoterv1alpha1.PullRequest, error) {
	pr, err := r.PullRequests.PullRequests(ns).Get(name)
	if err == nil {
		return pr, nil
	}
	if !apierrors.IsNotFound(err) || !proposes {
		return nil, ignoreNotFound(err)
	}
	pr, err = r.Client.PromoterV1alpha1().PullRequests(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return pr, err
}

func mergedDry(repo *git.Repository, head string) *mergedCommit {
	m := &mergedCommit{}
	m.DrySHA, _ = repository.DrySHAOf(repo, head)
	if m.DrySHA != "" {
		if c, err := repo.Commit(m.DrySHA); err == nil {
			m.DryTime = c.Time
		}
	}
	return m
}

// gates is the verdict of an environment's gates on promoting the proposed dry commit: a closed
// gate that approves revisions lets through only the dry SHAs it approves.
func (r *Reconciler) gates(ns string, sel *promoterv1alpha1.GateSelector, proposedDrySHA string) *promotion.GateVerdict {
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
	subject := gate.Subject{Revision: proposedDrySHA, Now: r.Clock.Now()}
	if proposedDrySHA == "" {
		subject.Unknown = "the proposed commit names no dry commit"
	}
	v := gate.AllowsFor(subject, refs, require, func(namespace, name string) (*gatingv1alpha1.Gate, error) {
		return r.Gates.Gates(namespace).Get(name)
	})
	return &promotion.GateVerdict{Allowed: v.Allowed, Message: v.Message}
}

// statusIndex maps key -> sha -> the CommitStatuses of one repository.
type statusIndex map[string]map[string][]*commitstatusv1alpha1.CommitStatus

func (r *Reconciler) statusIndex(ns, repo string) statusIndex {
	sel, _ := labels.Parse(commitstatusv1alpha1.KeyLabel)
	list, _ := r.CommitStatuses.CommitStatuses(ns).List(sel)
	idx := statusIndex{}
	for _, cs := range list {
		if cs.Spec.RepositoryRef.Name != repo {
			continue
		}
		k := cs.Labels[commitstatusv1alpha1.KeyLabel]
		if idx[k] == nil {
			idx[k] = map[string][]*commitstatusv1alpha1.CommitStatus{}
		}
		idx[k][cs.Spec.SHA] = append(idx[k][cs.Spec.SHA], cs)
	}
	return idx
}

// checks is the phase of each key on sha; "" (missing) when no CommitStatus of the key names it.
// A key that does not pass carries the description of a failing CommitStatus, else of a pending one.
func (idx statusIndex) checks(keys []string, sha string) []promotion.Check {
	out := make([]promotion.Check, len(keys))
	for i, k := range keys {
		out[i] = promotion.Check{Key: k}
		statuses := idx[k][sha]
		if sha == "" || len(statuses) == 0 {
			continue
		}
		phases := make([]promotion.Phase, len(statuses))
		for j, cs := range statuses {
			phases[j] = cs.Spec.Phase
		}
		out[i].Phase = promotion.KeyPhase(phases)
		for _, cs := range statuses {
			if out[i].Phase != promotion.Success && cs.Spec.Phase == out[i].Phase {
				out[i].Message = cs.Spec.Description
				break
			}
		}
	}
	return out
}

// statusKeys merges lists of commit-status selectors into their keys, each once, in order.
func statusKeys(lists ...[]promoterv1alpha1.CommitStatusSelector) []string {
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

// dryOrder answers promotion.DryOrder from comparisons made while observing, so the rules are
// evaluated without touching git.
type dryOrder map[[2]string]orderResult

type orderResult struct {
	Order promotion.Order
	Err   error
}

func (o dryOrder) Compare(x, y string) (promotion.Order, error) {
	if x == y {
		return promotion.Same, nil
	}
	if r, ok := o[[2]string{x, y}]; ok {
		return r.Order, r.Err
	}
	return 0, fmt.Errorf("dry %s was not compared with %s", x, y)
}

// compareDryCommits makes every comparison the rules will ask for: each proposed dry commit
// against the active dry commit of every later environment, and against each rollback hold.
func compareDryCommits(repo *git.Repository, branch string, g *promotion.Graph, envs []environment) dryOrder {
	order := dryOrder{}
	compare := func(x, y string) {
		if x == "" || y == "" || x == y {
			return
		}
		if _, done := order[[2]string{x, y}]; !done {
			o, err := repository.CompareDry(repo, branch, x, y)
			order[[2]string{x, y}] = orderResult{Order: o, Err: err}
		}
	}
	for i, e := range envs {
		dry := e.Proposed.DrySHA
		if e.ProposedMerged {
			dry = e.Active.DrySHA
		}
		for _, j := range g.After(i) {
			compare(dry, envs[j].Active.DrySHA)
		}
		for _, h := range e.Holds {
			compare(dry, h.DrySHA)
		}
	}
	return order
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
