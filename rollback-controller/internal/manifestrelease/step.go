package manifestrelease

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/snapshot"
)

// step is the one thing a reconcile does next, decided from its observation alone: a status
// write, then what to announce once it landed, then one act.
type step struct {
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
	Act      act
	// Operating marks the step that records or resumes the operation this reconcile carries.
	Operating bool
	// Done ends the steps once this one is carried out: the release is looked at again after
	// Requeue, or after spec.interval with Poll. Otherwise the next step follows at once.
	Done    bool
	Poll    bool
	Requeue time.Duration

	// What the act works on.
	Objects []*unstructured.Unstructured
	Stale   []manifest.Ref
	Adopt   []*unstructured.Unstructured
	Number  int64
	Fetched Fetched
}

// statusChange changes a status; generation is the release's.
type statusChange func(st *rollbackv1.ManifestReleaseStatus, generation int64)

// act is what a step does to the cluster after its status write.
type act int

const (
	actNone act = iota
	actAddFinalizer
	actRemoveFinalizer
	actPruneAll
	actCorrectDrift
	actSaveSnapshot
	actApplyVersion
	actAwaitVersion
	actTest
	actPrune
	actApplyRollback
	actAwaitRollback
)

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
