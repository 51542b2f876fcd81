package pullrequest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/crds"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/promoter-controller/internal/metrics"
	"github.com/sluicehq/sluice/promoter-controller/internal/repository"
)

// reconcileTimeout bounds the git and SCM work of one reconcile.
const reconcileTimeout = 2 * time.Minute

// staleCacheRetry is how soon a merge decided on a cache behind the API server is looked at again.
const staleCacheRetry = 200 * time.Millisecond

// Resolver gives the repository a PullRequest names.
type Resolver interface {
	Resolve(ctx context.Context, namespace, name string) (*repository.Repository, error)
}

// Reconciler keeps PullRequest objects and their pull requests in step.
type Reconciler struct {
	Client       sluice.Interface
	PullRequests promoterlisters.PullRequestLister
	Repositories Resolver
	// Kinds says whether the SCM kinds, from another chart, are installed and read; nil means they are.
	Kinds    crds.Kinds
	Recorder record.EventRecorder
	Metrics  *metrics.Metrics
	Log      *slog.Logger
	Clock    clock.PassiveClock
	// Merges is told of each status write, and wakes Flux on a merge recorded (fluxsources); nil
	// tells nothing.
	Merges interface {
		Recorded(cur, stored *promoterv1alpha1.PullRequest)
	}
}

// Reconcile implements controller.Reconciler: observe, decide, apply.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	l, found, err := reconcile.Load(key, r.get, nil)
	if !found || err != nil {
		return controller.Result{}, err
	}
	cur, pr := l.Cached, l.Next
	if finished(cur) {
		return controller.Result{}, r.alignSpec(ctx, cur)
	}
	if l.ReportSuspend(&pr.Status.Conditions) {
		_, err := r.writeStatus(ctx, cur, pr.Status)
		return controller.Result{}, err
	}
	if missing, ready := crds.Check(r.Kinds, crds.SCM...); missing != "" {
		return controller.Result{}, r.stall(ctx, cur, pr, crds.ReasonCRDMissing, missing)
	} else if !ready {
		// Installed a moment ago: the Kinds' OnChange brings the PullRequest back once it is read.
		return controller.Result{}, nil
	}
	repo, err := r.Repositories.Resolve(ctx, pr.Namespace, pr.Spec.RepositoryRef.Name)
	if repository.IsConfigError(err) {
		return controller.Result{}, r.stall(ctx, cur, pr, ReasonInvalidConfiguration, err.Error())
	}
	if err != nil {
		return controller.Result{}, err
	}
	opCtx, cancel := context.WithTimeout(ctx, reconcileTimeout)
	defer cancel()
	obs, err := r.observe(opCtx, repo, pr)
	if err != nil {
		return r.fail(ctx, cur, pr, pr.Status, err)
	}
	pl := decideGit
	if obs.SCM != nil {
		pl = decideSCM
	}
	return r.act(ctx, opCtx, cur, pr, repo, pl(obs))
}

// act applies a plan and writes the status it leads to.
func (r *Reconciler) act(ctx, opCtx context.Context, cur, pr *promoterv1alpha1.PullRequest, repo *repository.Repository, pl plan) (controller.Result, error) {
	if pl.Err != nil {
		return r.fail(ctx, cur, pr, pl.Status, pl.Err)
	}
	if pl.merges() {
		// A merge decided on a cache that has not seen this controller's own "merged" write yet
		// would merge again if the target was put back on the base meanwhile: read it live first.
		if current, err := r.cacheIsCurrent(ctx, cur); !current {
			// The newer copy's event may be a status write that does not wake the pull request
			// (WakesOnStatus): look again once the cache has it.
			return controller.Result{RequeueAfter: staleCacheRetry}, err
		}
	}
	return r.applyAndRecord(ctx, opCtx, cur, pr, repo, pl)
}

// applyAndRecord applies a plan and writes the status it leads to; a pull request just opened
// that is asked to merge is merged next, in the same reconcile.
func (r *Reconciler) applyAndRecord(ctx, opCtx context.Context, cur, pr *promoterv1alpha1.PullRequest, repo *repository.Repository, pl plan) (controller.Result, error) {
	status, err := r.apply(opCtx, repo, pr, &pl)
	if err != nil {
		return r.fail(ctx, cur, pr, status, err)
	}
	stored, err := r.writeStatus(ctx, cur, status)
	if err != nil {
		return controller.Result{}, err
	}
	if r.Merges != nil {
		r.Merges.Recorded(cur, stored)
	}
	if pl.Opened != nil && stored.Spec.State == promoterv1alpha1.PullRequestMerged {
		return r.mergeAfterCreate(ctx, opCtx, stored, repo, pl.Opened)
	}
	return controller.Result{RequeueAfter: pl.Requeue}, nil
}

// mergeAfterCreate decides the merge of a pull request this reconcile has just opened and
// recorded, on what the create answered rather than on a read of it: on Gitea that read was one
// call in four per promotion, and it can tell nothing the create did not. The SCM checks the
// head itself at the merge, and explains a refusal with a read. The number is recorded first
// (stored is the object as that write left it, newer than the cache), so a merge whose reply is
// lost is found by the next reconcile, not made twice.
func (r *Reconciler) mergeAfterCreate(ctx, opCtx context.Context, stored *promoterv1alpha1.PullRequest, repo *repository.Repository, opened *scm.PullRequest) (controller.Result, error) {
	next := stored.DeepCopy()
	return r.applyAndRecord(ctx, opCtx, stored, next, repo, decideSCM(&observation{PR: next, Now: r.Clock.Now(), SCM: &remote{PR: opened}}))
}

// WakesOnStatus reports whether a PullRequest whose status alone changed has anything left to
// do: only a finished one, whose spec.state is aligned next. Only this reconciler writes the
// status, and a status it wrote otherwise leaves the pull request waiting for its spec, its
// creator's enqueue after a fetch, or a requeue it asked for; the event of that write would only
// read the SCM again to decide the same (on Gitea, one call in five per promotion).
func WakesOnStatus(obj metav1.Object) bool {
	pr, ok := obj.(*promoterv1alpha1.PullRequest)
	return !ok || finished(pr)
}

// observe reads the git heads (plain git) or the pull request on the SCM.
func (r *Reconciler) observe(ctx context.Context, repo *repository.Repository, pr *promoterv1alpha1.PullRequest) (*observation, error) {
	o := &observation{PR: pr, Now: r.Clock.Now()}
	if !repo.HasPullRequests() {
		heads, err := r.gitHeads(ctx, repo.Git, pr)
		o.Git = heads
		return o, err
	}
	o.SCM = &remote{}
	if pr.Status.ID == "" {
		// Nothing to read yet: the create finds the one an earlier attempt opened, if any.
		return o, nil
	}
	number, err := strconv.ParseInt(pr.Status.ID, 10, 64)
	if err != nil {
		return nil, controller.Permanent(fmt.Errorf("status.id %q is not a pull request number", pr.Status.ID))
	}
	o.SCM.PR, err = repo.Provider.GetPullRequest(ctx, repo.SCM, number)
	return o, err
}

// gitHeads reads the source and target branches. Two kinds of pull request are read from the
// shared cache without a fetch of their own, so that an event costs one fetch, the strategy's:
//   - one to merge whose head the cache already holds (its strategy fetched a moment ago): the
//     merge's push is a compare-and-swap that fetches again if the target moved, so a second
//     fetch per promotion would only cost a round trip;
//   - an open one of a PromotionStrategy (see strategyFetches).
func (r *Reconciler) gitHeads(ctx context.Context, repo *git.Repository, pr *promoterv1alpha1.PullRequest) (*gitHeads, error) {
	src, dst := pr.Spec.SourceBranch, pr.Spec.TargetBranch
	if !cachedHeadToMerge(repo, pr) && !strategyFetches(repo, pr) {
		start := time.Now()
		err := repo.Fetch(ctx, src, dst)
		r.Metrics.ObserveGit("fetch", start, err)
		var missing *git.BranchNotFoundError
		if err != nil && !errors.As(err, &missing) {
			return nil, err
		}
	}
	h := &gitHeads{}
	h.Head, _ = repo.Resolve(src)
	h.Target, _ = repo.Resolve(dst)
	if h.Head != "" && h.Target != "" {
		h.HeadInTarget, _ = repo.IsAncestor(h.Head, h.Target)
	}
	return h, nil
}

// cachedHeadToMerge reports whether pr is to be merged and the cache holds its expected head on
// the source branch, and a target branch.
func cachedHeadToMerge(repo *git.Repository, pr *promoterv1alpha1.PullRequest) bool {
	if pr.Spec.State != promoterv1alpha1.PullRequestMerged || pr.Spec.ExpectedHeadSHA == "" {
		return false
	}
	head, err := repo.Resolve(pr.Spec.SourceBranch)
	if err != nil || head != pr.Spec.ExpectedHeadSHA {
		return false
	}
	target, err := repo.Resolve(pr.Spec.TargetBranch)
	// A merge guarded by its base goes only onto that base, and never again onto another: a cache
	// whose target is not the base is stale for it, and the fetch it saves would turn into a refusal.
	return err == nil && (pr.Spec.ExpectedBaseSHA == "" || target == pr.Spec.ExpectedBaseSHA)
}

// strategyFetches reports whether pr is an open pull request of a PromotionStrategy whose
// branches the cache holds. Such a pull request waits for its strategy to ask for the merge; what
// its reconcile looks for in git is a merge made outside Sluice. The strategy fetches these same
// branches, into the same cache, on every event that can move git (a refresh, a webhook, its
// poll), and enqueues its open pull requests after each of its reconciles: so the cache is as new
// as the strategy's last fetch, and a fetch here would find what the strategy's next one finds,
// one round trip sooner, once per open pull request and strategy reconcile: five of the six ref
// advertisements of a three-environment wave (TestAWaveFetchesItsRepositoryOnce).
func strategyFetches(repo *git.Repository, pr *promoterv1alpha1.PullRequest) bool {
	if pr.Spec.State != promoterv1alpha1.PullRequestOpen && pr.Spec.State != "" {
		return false
	}
	owner := metav1.GetControllerOf(pr)
	if owner == nil || owner.Kind != "PromotionStrategy" || owner.APIVersion != promoterv1alpha1.SchemeGroupVersion.String() {
		return false
	}
	if _, err := repo.Resolve(pr.Spec.SourceBranch); err != nil {
		return false
	}
	_, err := repo.Resolve(pr.Spec.TargetBranch)
	return err == nil
}

// stall reports a repository or provider a person must fix, with a Warning Event once per new
// problem, sent only after the write that records it. Like every status write it is not retried
// on a conflict: a stall decided from a stale copy would land again with a new transition time,
// and be announced again; the reconcile the conflict brings back decides from the live object,
// finds it stalled already, and writes and says nothing.
func (r *Reconciler) stall(ctx context.Context, cur, pr *promoterv1alpha1.PullRequest, reason, problem string) error {
	conditions.MarkStalled(&pr.Status.Conditions, pr.Generation, reason, problem)
	pr.Status.ObservedGeneration = pr.Generation
	_, wrote, err := statusWriter.Write(ctx, r.Client.PromoterV1alpha1().PullRequests(pr.Namespace), cur, pr)
	if wrote {
		r.Recorder.Event(pr, corev1.EventTypeWarning, reason, problem)
	}
	return err
}

// fail writes status with the error, Stalled when retrying cannot help.
func (r *Reconciler) fail(ctx context.Context, cur, pr *promoterv1alpha1.PullRequest, status promoterv1alpha1.PullRequestStatus, problem error) (controller.Result, error) {
	permanent := scm.IsPermanent(problem) || controller.IsPermanent(problem)
	failed(&status, pr, problem, permanent)
	if _, err := r.writeStatus(ctx, cur, status); err != nil {
		return controller.Result{}, err
	}
	if permanent {
		return controller.Result{}, controller.Permanent(problem)
	}
	return controller.Result{}, problem
}

// statusWriter writes PullRequest status, and returns a conflict rather than put this
// reconcile's status on a live object that moved on. A status is decided from the cache's copy,
// and carries over what that copy says: put on the live object, one decided from a copy older
// than the merge ("open, waits for spec.state merged") undid the merge's record, and the next
// reconcile merged the same pull request again onto a target put back on its base since. The
// reconcile the conflict brings back decides again from the live object.
var statusWriter = reconcile.StatusWriter[*promoterv1alpha1.PullRequest, promoterv1alpha1.PullRequestStatus]{
	Kind: "PullRequest", FieldManager: FieldManager, ReturnConflicts: true,
	Status: func(pr *promoterv1alpha1.PullRequest) *promoterv1alpha1.PullRequestStatus { return &pr.Status },
}

// writeStatus writes status on cur and returns the object as stored.
func (r *Reconciler) writeStatus(ctx context.Context, cur *promoterv1alpha1.PullRequest, status promoterv1alpha1.PullRequestStatus) (*promoterv1alpha1.PullRequest, error) {
	next := cur.DeepCopy()
	next.Status = status
	stored, _, err := statusWriter.Write(ctx, r.Client.PromoterV1alpha1().PullRequests(cur.Namespace), cur, next)
	return stored, err
}

// Priority implements controller.Prioritizer. A wave of new dry commits makes every
// environment's pull request at once, and on an SCM each opening and each merge is a slow call;
// served first in, first out, the openings of later environments held the merges of the first
// behind them. So a pull request asked to merge (or close) goes first, then one that only needs
// opening or watching, and within each the earlier stage first. A pull request with no stage (a
// revert's, a person's) counts as a first stage: nothing waits behind it.
func (r *Reconciler) Priority(key string) int {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0
	}
	pr, err := r.get(namespace, name)
	if err != nil || finished(pr) {
		return 0
	}
	p := promoterv1alpha1.MaxEnvironments - stage(pr)
	if pr.Spec.State == promoterv1alpha1.PullRequestMerged || pr.Spec.State == promoterv1alpha1.PullRequestClosed {
		p += promoterv1alpha1.MaxEnvironments
	}
	return p
}

// stage is pr's place in its strategy (StageLabel), 0 when it has none.
func stage(pr *promoterv1alpha1.PullRequest) int {
	n, err := strconv.Atoi(pr.Labels[promoterv1alpha1.StageLabel])
	if err != nil || n < 0 {
		return 0
	}
	return min(n, promoterv1alpha1.MaxEnvironments-1)
}

func (r *Reconciler) get(namespace, name string) (*promoterv1alpha1.PullRequest, error) {
	return r.PullRequests.PullRequests(namespace).Get(name)
}

// alignSpec sets the spec.state of a finished pull request to what happened to it.
func (r *Reconciler) alignSpec(ctx context.Context, cur *promoterv1alpha1.PullRequest) error {
	spec, changed := alignedSpec(cur)
	if !changed {
		return nil
	}
	next := cur.DeepCopy()
	next.Spec = spec
	_, err := r.Client.PromoterV1alpha1().PullRequests(cur.Namespace).Update(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager})
	if apierrors.IsConflict(err) {
		// The status write just made is not in the cache yet, or someone changed the spec:
		// the next event brings the object back.
		return nil
	}
	return err
}

// cacheIsCurrent reports whether the API server still holds the cached PullRequest. When it holds
// a newer one, the update event brings the PullRequest back to be decided on that.
func (r *Reconciler) cacheIsCurrent(ctx context.Context, cached *promoterv1alpha1.PullRequest) (bool, error) {
	live, err := r.Client.PromoterV1alpha1().PullRequests(cached.Namespace).Get(ctx, cached.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("PullRequest %s/%s: %w", cached.Namespace, cached.Name, err)
	}
	return live.ResourceVersion == cached.ResourceVersion, nil
}
