package manifestrelease

// The values the three legs pass along: the progress kept from step to step, the observation
// observe returns and decide reads, the step decide returns, and the result apply returns.

import (
	"cmp"
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// progress is what the earlier steps of one operation read and found, kept in memory from step
// to step (Progress) while the release is as the last step left it. What must survive a crash is
// in the status; this only spares the next step the reads already made.
type progress struct {
	// Left is the release as the last step stored it: the progress holds while it is unchanged.
	Left *rollbackv1.ManifestRelease

	// Read at the first look at a release with no operation recorded, in this order; the first
	// that settles the step leaves the rest unread.
	SpecErr error
	Ask     *rollbackAsk
	Source  *sourceRead
	Upgrade *upgradePlan

	// Op is the snapshot the recorded operation applies.
	Op *opTarget
	// DeletionProblem is a right the identity lacks to delete the objects of a deleted release.
	DeletionProblem *problem
	deletionChecked bool

	Found findings
	// Steps counts the steps taken since the progress was started, to stop a circle.
	Steps int
}

// observation is everything one step is decided from: the release as it is now, and the
// progress of its operation, completed by observe with what the next decision needs.
type observation struct {
	// Release is the release as stored, read afresh by this reconcile.
	Release *rollbackv1.ManifestRelease
	Suspend suspend.State
	Now     time.Time
	// Actor names the identity the release acts as, for messages.
	Actor string
	progress
}

// result is what carrying out a step left: the release as stored after its writes, and what its
// act found (one finding, or none).
type result struct {
	Release *rollbackv1.ManifestRelease
	Found   findings
}

// after is the progress the next step starts from: this one, with what step s found and the
// release as it stored it.
func (p progress) after(s step, res result) progress {
	next := p
	next.Left = res.Release
	next.Found = p.Found.with(res.Found)
	next.Found.Operating = p.Found.Operating || s.Operating
	if !res.Found.Awaiting {
		next.Steps++
	}
	return next
}

// with is f with what one act found laid over it: each act sets one finding, which replaces the
// one an earlier act of the same kind set (a look at health after the apply it follows).
func (f findings) with(n findings) findings {
	f.Awaiting = n.Awaiting
	f.Saved, f.Applied, f.Tested = cmp.Or(n.Saved, f.Saved), cmp.Or(n.Applied, f.Applied), cmp.Or(n.Tested, f.Tested)
	f.Pruned, f.Rolled = cmp.Or(n.Pruned, f.Pruned), cmp.Or(n.Rolled, f.Rolled)
	f.Drift, f.Deleted = cmp.Or(n.Drift, f.Drift), cmp.Or(n.Deleted, f.Deleted)
	return f
}

// sourceRead is the source as read, parsed and measured.
type sourceRead struct {
	Fetched Fetched
	// Err is a source that cannot be read, with what to do about it.
	Err        *SourceError
	Digest     string
	DigestErr  error
	Objects    []*unstructured.Unstructured
	PrepareErr error
}

// upgradePlan is what an upgrade to the source would do, and what stops it before it starts.
type upgradePlan struct {
	Number   int64
	Objects  []*unstructured.Unstructured
	Refs     []manifest.Ref
	Previous []manifest.Ref
	// Stale are the objects of the inventory the new version drops, when pruning.
	Stale   []manifest.Ref
	Problem *problem
	// Adopt are live objects the release takes over, with their owners' leave.
	Adopt []*unstructured.Unstructured
}

// opTarget is the snapshot the recorded operation applies, prepared, and for a rollback what it
// changes and what stops it.
type opTarget struct {
	Number     int64
	Objects    []*unstructured.Unstructured
	LoadErr    error
	PrepareErr error
	// Target, Stale and Missing: a rollback's objects, those only the version left had, and
	// whether the target has objects the inventory does not.
	Target  []manifest.Ref
	Stale   []manifest.Ref
	Missing bool
	Problem *problem
}

// rollbackAsk is a rollback-to annotation not yet acted on.
type rollbackAsk struct {
	Value  string
	Number int64
	// Refused says why the request cannot be carried out before any snapshot is read.
	Refused string
	LoadErr error
	Info    snapshot.Info
	Files   []snapshot.File
	// Kept lists the snapshots that exist, for a refusal.
	Kept string
}

// findings are what the acts of the steps found: each act returns one, which apply hands back
// and progress.after keeps.
type findings struct {
	// Operating is true once a step recorded or resumed the operation the observation carries.
	Operating bool
	// Awaiting is set by the last act, a look at health that found objects not healthy yet and
	// time left: the next look comes after healthPoll.
	Awaiting bool
	Saved    *saved
	Applied  *applied
	Tested   *tested
	Pruned   *pruned
	Rolled   *rolled
	Drift    *drift
	Deleted  *deleted
}

type saved struct {
	Info snapshot.Info
	Err  error
}

// applied is a version applied at At, from which spec.timeout counts; Healthy once every
// object is.
type applied struct {
	Failure *failed
	At      time.Time
	Healthy bool
}

type tested struct {
	Result  rollbackv1.TestResult
	Message string
}

type pruned struct {
	Kept        []manifest.Ref
	Message     string
	KeptNumbers []int64
	Foreign     error
	Events      []event
}

// rolled is a rollback applied at At; Settled once its objects are healthy or the time for
// them ran out, which HealthNote then says.
type rolled struct {
	Refused    error
	At         time.Time
	Settled    bool
	HealthNote string
}

type drift struct{ Err error }

type deleted struct {
	Deleted, Left []manifest.Ref
	Err           error
}

// failed is why a version did not make it.
type failed struct {
	Reason  string
	Message string
}

// step is the one thing a reconcile does next, decided from its observation alone: a status
// write, then what to announce once it landed, then one act.
type step struct {
	// Release is the release the step writes and acts for, as observed.
	Release *rollbackv1.ManifestRelease
	// Name says what the step is, in tests and in the log of a failed act.
	Name string
	// Status changes the status (with the generation it observes); nil writes nothing. It is
	// written before the act, so that a crash during the act resumes from what it records.
	Status statusChange
	// Problem is something a person must fix: decide turns it into the Stalled condition.
	Problem *problem
	Events  []event
	Counts  []count
	// Snapshot sets the snapshot gauges.
	Snapshot *snapshot.Info
	Watch    watchOrder
	// Act is what the step does to the cluster, with what it works on; nil does nothing.
	Act act
	// Operating marks the step that records or resumes the operation this reconcile carries.
	Operating bool
	// Done ends the steps once this one is carried out: the release is looked at again after
	// Requeue, or after spec.interval with Poll. Otherwise the next step follows at once.
	Done    bool
	Poll    bool
	Requeue time.Duration
}

// statusChange changes a status; generation is the release's.
type statusChange func(st *rollbackv1.ManifestReleaseStatus, generation int64)

// act is what a step does to the cluster after its status write, as a value that holds what it
// works on (the acts below). do acts as the identity the release acts as, on mr as the status
// write stored it, and returns what it found.
type act interface {
	do(ctx context.Context, r *Reconciler, as *identity, mr *rollbackv1.ManifestRelease) (findings, error)
}

// The acts, each with what it works on; their do methods are in apply.go and apply_operation.go.

// addFinalizer holds the release for its deletion.
type addFinalizer struct{}

// removeFinalizer lets a deleted release go.
type removeFinalizer struct{}

// pruneAll deletes the objects of a deleted release, its inventory.
type pruneAll struct{ Inventory []manifest.Ref }

// correctDrift applies the deployed version again.
type correctDrift struct{ Objects []*unstructured.Unstructured }

// saveSnapshot saves the version fetched as snapshot Number, and records the objects to take over
// (Adopt).
type saveSnapshot struct {
	Number  int64
	Fetched Fetched
	Adopt   []*unstructured.Unstructured
}

// applyVersion applies the objects of a version, at At.
type applyVersion struct {
	Objects []*unstructured.Unstructured
	At      time.Time
}

// awaitVersion looks at Now at the health of the version applied at Since.
type awaitVersion struct {
	Objects    []*unstructured.Unstructured
	Since, Now time.Time
}

// runTests runs the tests of the release.
type runTests struct{}

// pruneStale deletes what the upgraded version dropped (Stale), and the snapshots beyond the
// history limit.
type pruneStale struct{ Stale []manifest.Ref }

// applyRollback applies the snapshot a rollback goes back to, at At, and deletes what only the
// version left had (Stale).
type applyRollback struct {
	Objects []*unstructured.Unstructured
	Stale   []manifest.Ref
	At      time.Time
}

// awaitRollback looks at Now at the health of the version rolled back to at Since.
type awaitRollback struct {
	Objects    []*unstructured.Unstructured
	Since, Now time.Time
}

// problem is something a person must fix, which stops the release where it is.
type problem struct {
	Reason, Message string
	// Backoff looks again with retryDelay (what is wrong is not watched); otherwise after Recheck.
	Backoff bool
	Recheck time.Duration
	// More are further problems, announced as Events with the first.
	More []event
}

// watchOrder says what to do with the watch for a missing source ConfigMap.
type watchOrder struct {
	Forget bool
	// Await names the ConfigMap to watch for.
	Await string
}

type event struct {
	Type, Reason, Message string
}

// count is one increment of a counter: upgrades, tests or rollbacks, by its label value.
type count struct {
	Metric, Value string
}
