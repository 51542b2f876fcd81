package pullrequest

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/crds"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
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

// Reconcile implements controller.Reconciler: observe, decide, apply. A pull request that this
// reconcile opens and that is asked to merge goes through decide once more, on the fresh
// observation the create returned, and is merged in the same reconcile.
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
	repo, res, err := r.repository(ctx, cur, pr)
	if repo == nil {
		return res, err
	}
	opCtx, cancel := context.WithTimeout(ctx, reconcileTimeout)
	defer cancel()
	obs, err := r.observe(opCtx, repo, pr)
	if err != nil {
		return r.fail(ctx, cur, pr, pr.Status, err)
	}
	pl := decide(obs)
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
	res, opened, err := r.apply(ctx, opCtx, cur, pr, repo, pl)
	if opened == nil {
		return res, err
	}
	// The object as the create's status write left it is newer than the cache: it is both the
	// copy written on and the one decided on.
	res, _, err = r.apply(ctx, opCtx, opened.PR, opened.PR, repo, decide(opened))
	return res, err
}

// repository resolves the repository pr names, or stalls pr on what a person must fix; nil when
// the reconcile ends here with res and err.
func (r *Reconciler) repository(ctx context.Context, cur, pr *promoterv1alpha1.PullRequest) (*repository.Repository, controller.Result, error) {
	if missing, ready := crds.Check(r.Kinds, crds.SCM...); missing != "" {
		return nil, controller.Result{}, r.stall(ctx, cur, pr, crds.ReasonCRDMissing, missing)
	} else if !ready {
		// Installed a moment ago: the Kinds' OnChange brings the PullRequest back once it is read.
		return nil, controller.Result{}, nil
	}
	repo, err := r.Repositories.Resolve(ctx, pr.Namespace, pr.Spec.RepositoryRef.Name)
	if repository.IsConfigError(err) {
		return nil, controller.Result{}, r.stall(ctx, cur, pr, ReasonInvalidConfiguration, err.Error())
	}
	if err != nil {
		return nil, controller.Result{}, err
	}
	return repo, controller.Result{}, nil
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
