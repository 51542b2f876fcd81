// Package revertcommit reconciles RevertCommits: it writes one commit restoring an environment
// branch to the hydrated manifests of an earlier dry commit, pushes it to a revert branch, and
// hands it to the promoter-controller as a PullRequest, which opens (on an SCM) and merges it.
//
// A reconcile is one pass, in the promoter's promotionstrategy shape:
//
//   - observe reads afresh what the decision needs: the strategy, the environment branch and this
//     revert's own commit in git, its PullRequest or another revert's claim on the name;
//   - decide, a pure function of that observation, names one step: adopt, write, open, sync,
//     reclaim, wait, or end (merged, superseded, failed, stalled);
//   - apply carries that step out (the git work behind a small interface, the reverter, which
//     the observation does not carry), records it in the revert's status, and the status is
//     written; its Events and metrics follow once that write landed. A step that leads on asks
//     for the next pass at once, which reads again before it decides.
//
// Each step is found again from git and the cluster after a crash: the revert branch's tip
// carries the RevertCommit's uid, the commit is the same for the same inputs, and the
// PullRequest's name comes from the RevertCommit's.
package revertcommit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	commitstatuslisters "github.com/sluicehq/sluice/api/generated/listers/commitstatus/v1alpha1"
	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	rollbacklisters "github.com/sluicehq/sluice/api/generated/listers/rollback/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/pkg/scmgit"
	"github.com/sluicehq/sluice/rollback-controller/internal/metrics"
)

// FieldManager is the field manager of every write.
const FieldManager = "rollback-controller"

// Event reasons.
const (
	EventRollbackStarted = "RollbackStarted"
	EventRollbackMerged  = "RollbackMerged"
	EventRollbackFailed  = "RollbackFailed"
	// EventRollbackReplanned: the environment branch moved before the merge, still on the bad
	// dry commit or an older one; a new revert commit was written on the new tip.
	EventRollbackReplanned = "RollbackReplanned"
	// EventGateBypassed: the revert was asked to merge while a closed Gate held its strategy.
	EventGateBypassed = "GateBypassed"
	// EventRollbackSuperseded: a fix forward landed first; nothing was merged.
	EventRollbackSuperseded = "RollbackSuperseded"
)

// ReasonPromoterCRDsMissing is the Stalled reason of a RevertCommit whose peer CRDs are not
// installed.
const ReasonPromoterCRDsMissing = "PromoterCRDsMissing"

// Defaults.
const (
	// DefaultPollInterval is how often an open revert looks at git for a merge made outside
	// Sluice, besides the PullRequest and PromotionStrategy events that usually tell it first.
	DefaultPollInterval = time.Minute
	// DefaultStalledRecheck is how soon a revert stalled on something not watched (a Secret)
	// looks again.
	DefaultStalledRecheck = time.Minute
	// DefaultHistoryLimit is how many commits of an environment's first-parent history are
	// searched for the target dry SHA.
	DefaultHistoryLimit = 1000
)

// reconcileTimeout bounds the git work of one reconcile.
const reconcileTimeout = 2 * time.Minute

// Reconciler reconciles RevertCommits.
type Reconciler struct {
	Client        sluice.Interface
	RevertCommits rollbacklisters.RevertCommitLister
	Strategies    promoterlisters.PromotionStrategyLister
	// PullRequests are read for a pull request an ended revert left asking to merge; a revert's
	// own pull request is read live, when it acts on it.
	PullRequests promoterlisters.PullRequestLister
	// CommitStatuses are read for the checks a revert commit must pass before it merges.
	CommitStatuses commitstatuslisters.CommitStatusLister
	Opener         *scmgit.Opener
	Recorder       record.EventRecorder
	Metrics        *metrics.Rollbacks
	Log            *slog.Logger
	// PeerCRDs reports whether the CRDs of other Sluice charts that reverts need are served and
	// watched, and when not, which are missing and which chart installs them: without them no
	// revert can be made, and RevertCommits say so. nil means they are.
	PeerCRDs func() (ready bool, missing string)

	PollInterval   time.Duration
	StalledRecheck time.Duration
	HistoryLimit   int
	// Clock is the time: the manager's in a process, a fake one in tests.
	Clock clock.PassiveClock
	// FluxSources is told of each revert merged, once its status is written, and wakes the Flux
	// sources of its branch (fluxsources); nil tells nothing.
	FluxSources interface {
		Merged(rc *rollbackv1alpha1.RevertCommit)
	}
}

// stall is input a person must fix: reported as Stalled with its reason and message.
type stall struct {
	reason, message string
	// recheck > 0 looks again after it, for causes no watch reports (a Secret, a CRD).
	recheck time.Duration
}

func (s *stall) Error() string { return s.message }

// pass is one reconcile of one RevertCommit: the copy whose status apply changes, and what to
// announce once that status is written.
type pass struct {
	rc     *rollbackv1alpha1.RevertCommit
	events []func()
}

// announce queues an Event and metrics for after the status write, so a reconcile that started
// from a stale cache never announces the same change twice.
func (p *pass) announce(f func()) { p.events = append(p.events, f) }

// revertStatus writes RevertCommit status. A status decided from a stale copy (the cache behind
// this controller's own last write) must not land: it would restart the revert's clock and
// announce its start twice. The conflict re-runs the reconcile from the live object instead.
var revertStatus = reconcile.StatusWriter[*rollbackv1alpha1.RevertCommit, rollbackv1alpha1.RevertCommitStatus]{
	Kind: "RevertCommit", FieldManager: FieldManager, ReturnConflicts: true,
	Status: func(rc *rollbackv1alpha1.RevertCommit) *rollbackv1alpha1.RevertCommitStatus { return &rc.Status },
}

// Reconcile implements controller.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	l, found, err := reconcile.Load(key, r.get, func(rc *rollbackv1alpha1.RevertCommit) bool { return rc.Spec.Suspend })
	if !found || err != nil {
		return controller.Result{}, err
	}
	if final(l.Cached.Status.Phase) {
		return controller.Result{}, r.closeLeftover(ctx, l.Cached)
	}
	if current, err := r.cacheIsCurrent(ctx, l.Cached); !current {
		return controller.Result{}, err
	}
	cur, p := l.Cached, &pass{rc: l.Next}
	st, gen := &p.rc.Status, p.rc.Generation
	st.ObservedGeneration = gen
	if st.Phase == "" {
		st.Phase = rollbackv1alpha1.RevertPending
	}
	if l.ReportSuspend(&st.Conditions) {
		return controller.Result{}, r.write(ctx, cur, p)
	}

	opCtx, cancel := context.WithTimeout(ctx, reconcileTimeout)
	defer cancel()
	// One pass: read afresh, decide once, act once. The step's status is written below and the
	// next step is the next pass's, decided from a new read.
	o, repo, err := r.observe(opCtx, p.rc)
	var res controller.Result
	if err == nil {
		res, err = r.apply(opCtx, p, o, decide(o), repo)
	}
	var stalled *stall
	switch {
	case errors.Is(err, errMovedOn):
		// Decided on a revert that moved on: nothing of this pass is written.
		return controller.Result{}, nil
	case errors.As(err, &stalled):
		conditions.MarkStalled(&st.Conditions, gen, stalled.reason, stalled.message)
		if werr := r.write(ctx, cur, p); werr != nil {
			return controller.Result{}, werr
		}
		return controller.Result{RequeueAfter: stalled.recheck}, nil
	case err != nil:
		conditions.MarkNotReady(&st.Conditions, gen, "Retrying", err.Error())
		if werr := r.write(ctx, cur, p); werr != nil {
			r.Log.Info("cannot write status", "revertcommit", key, "error", werr)
		}
		return controller.Result{}, err
	}
	return res, r.write(ctx, cur, p)
}

func (r *Reconciler) get(namespace, name string) (*rollbackv1alpha1.RevertCommit, error) {
	return r.RevertCommits.RevertCommits(namespace).Get(name)
}

// write stores the status when it changed, then announces what the pass did: only after a write
// this call made, so a change is announced once.
func (r *Reconciler) write(ctx context.Context, cur *rollbackv1alpha1.RevertCommit, p *pass) error {
	_, wrote, err := revertStatus.Write(ctx, r.Client.RollbackV1alpha1().RevertCommits(cur.Namespace), cur, p.rc)
	if err != nil || !wrote {
		return err
	}
	for _, f := range p.events {
		f()
	}
	return nil
}

func final(phase rollbackv1alpha1.RevertPhase) bool { return Final(phase) }

// cacheIsCurrent reports whether the API server still holds the cached revert. Two replicas (or
// shards) can both hold a revert for a moment: the one whose cache is behind must not push, reclaim
// or open anything for a revert the other has moved on or ended. It waits for its cache, whose
// update brings the revert back.
func (r *Reconciler) cacheIsCurrent(ctx context.Context, cached *rollbackv1alpha1.RevertCommit) (bool, error) {
	live, err := r.Client.RollbackV1alpha1().RevertCommits(cached.Namespace).Get(ctx, cached.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("RevertCommit %s: %w", cached.Name, err)
	}
	return live.ResourceVersion == cached.ResourceVersion, nil
}

// Final reports whether a revert in phase is over: nothing more will happen to it.
func Final(phase rollbackv1alpha1.RevertPhase) bool {
	return phase == rollbackv1alpha1.RevertMerged || phase == rollbackv1alpha1.RevertFailed || phase == rollbackv1alpha1.RevertSuperseded
}

func configStall(err error, recheck time.Duration) error {
	if scmgit.IsConfigError(err) {
		return &stall{reason: "InvalidRepository", message: err.Error(), recheck: recheck}
	}
	return fmt.Errorf("open the repository: %w", err)
}
