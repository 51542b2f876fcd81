package manifestrelease

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// step is the one thing a reconcile does next, decided from its observation alone: a status
// write, then what to announce once it landed, then one act.
type step struct {
	// Name says what the step is, in tests and in the log of a failed act.
	Name string
	// Status changes the status (with the generation it observes); nil writes nothing. It is
	// written before the act, so that a crash during the act resumes from what it records.
	Status statusChange
	Events []event
	Counts []count
	// Snapshot sets the snapshot gauges.
	Snapshot *snapshot.Info
	Watch    watchOrder
	Act      act
	// Operating marks the step that records or resumes the operation this reconcile carries.
	Operating bool
	// Done ends the reconcile once the step is carried out; Requeue looks again after it.
	Done    bool
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
	actTest
	actPrune
	actApplyRollback
)

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

// decide turns an observation into the next step. It reads nothing and writes nothing.
func decide(o *observation) step {
	mr := o.Release
	op := mr.Status.Operation
	switch {
	case mr.DeletionTimestamp != nil:
		return decideDeletion(o)
	case !holdsFinalizer(mr):
		return step{Name: "hold for deletion", Act: actAddFinalizer}
	case o.Suspend.Suspended:
		return step{Name: "suspended", Status: settle(o), Done: true}
	case op != nil && !o.Found.Operating:
		return step{Name: "resume", Operating: true, Events: []event{normal(ReasonResumed, fmt.Sprintf("resuming the %s to %s started at %s",
			strings.ToLower(string(op.Action)), describe(op.Version, op.Number), op.StartTime.UTC().Format(time.RFC3339)))}}
	case op != nil && op.Action == rollbackv1.ActionUpgrade:
		return decideUpgradeOp(o)
	case op != nil:
		return decideRollbackOp(o)
	case o.SpecErr != nil:
		return stall(o, ReasonInvalidSpec, o.SpecErr.Error(), 0)
	case o.Ask != nil:
		return decideAsk(o)
	}
	s := decideSource(o)
	s.Watch = watchOrder{Forget: true}
	if o.Source.Err != nil && o.Source.Err.MissingConfigMap != "" {
		s.Watch = watchOrder{Await: o.Source.Err.MissingConfigMap}
	}
	return s
}

// decideSource decides from what the source gives: report it deployed, keep it held, or upgrade.
func decideSource(o *observation) step {
	src, mr := o.Source, o.Release
	switch {
	case src.Err != nil:
		return sourceFailed(o, src.Err)
	case src.DigestErr != nil:
		return stall(o, ReasonInvalidManifests, src.DigestErr.Error(), interval(mr))
	case src.Digest == mr.Status.DeployedDigest:
		return decideDeployed(o)
	case !wantsUpgrade(o):
		return finish(o, step{Name: "held", Requeue: interval(mr)})
	}
	return decideUpgrade(o)
}

// wantsUpgrade reports whether the source gives manifests that are neither deployed nor held:
// a version that failed is not tried again until its source or the spec changes.
func wantsUpgrade(o *observation) bool {
	src := o.Source
	if src.Err != nil || src.DigestErr != nil || src.Digest == o.Release.Status.DeployedDigest {
		return false
	}
	st := restingStatus(o)
	return !(st.LastAttemptFailed && src.Digest == st.LastAttemptedDigest && st.LastAttemptedGeneration == o.Release.Generation)
}

// decideDeployed applies the deployed version again, as Flux does on each interval (objects
// deleted or changed out of band come back), then reports it deployed.
func decideDeployed(o *observation) step {
	src, mr := o.Source, o.Release
	driftErr := src.PrepareErr
	if o.Found.Drift == nil && driftErr == nil {
		return step{Name: "correct drift", Act: actCorrectDrift, Objects: src.Objects}
	}
	if o.Found.Drift != nil {
		driftErr = o.Found.Drift.Err
	}
	if driftErr != nil {
		message := fmt.Sprintf("re-applying %s to correct drift failed: %v", describe(mr.Status.DeployedVersion, mr.Status.UpgradeNumber), driftErr)
		return stall(o, ReasonApplyFailed, message, retryDelay(mr, ReasonApplyFailed, o.Now))
	}
	st := restingStatus(o)
	s := step{Name: "deployed", Requeue: interval(mr)}
	ready := conditions.Get(st.Conditions, conditions.Ready)
	if ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == mr.Generation && !stalledOrReconciling(st) && !st.LastAttemptFailed {
		return finish(o, s)
	}
	message := describe(st.DeployedVersion, st.UpgradeNumber) + " is deployed"
	s.Status = func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
		st.LastAttemptFailed = false
		conditions.MarkReady(&st.Conditions, gen, ReasonDeployed, message)
	}
	return finish(o, s)
}

// sourceFailed reports a source that cannot be read: Stalled when a person must act, looked at
// again soon and then less often when what is wrong is not watched; otherwise not Ready, retried.
func sourceFailed(o *observation, err *SourceError) step {
	mr := o.Release
	if err.NeedsPerson {
		recheck := interval(mr)
		if err.Reason == ReasonForbidden || err.Reason == ReasonSourceNotFound {
			recheck = retryDelay(mr, err.Reason, o.Now)
		}
		return stall(o, err.Reason, err.Message, recheck)
	}
	message := conditionMessage(err.Message)
	s := step{Name: "source unavailable", Requeue: min(interval(mr), time.Minute)}
	if c := conditions.Get(mr.Status.Conditions, conditions.Ready); c == nil || c.Message != message {
		s.Status = func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
			conditions.MarkNotReady(&st.Conditions, gen, err.Reason, message)
		}
	}
	return finish(o, s)
}

// stall records a problem a person must fix, announced once. recheck > 0 looks again after it.
func stall(o *observation, reason, message string, recheck time.Duration) step {
	message = conditionMessage(message)
	s := step{Name: "stall " + reason, Requeue: recheck}
	mr := o.Release
	if c := conditions.Get(mr.Status.Conditions, conditions.Stalled); c == nil || c.Message != message || c.ObservedGeneration != mr.Generation {
		s.Status = func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
			conditions.MarkStalled(&st.Conditions, gen, reason, message)
		}
		s.Events = []event{warning(reason, message)}
	}
	return finish(o, s)
}

// block stalls on what stops an operation before it starts, with its further problems announced.
func block(o *observation, b *blocker) step {
	recheck := b.Recheck
	if b.Backoff {
		recheck = retryDelay(o.Release, b.Reason, o.Now)
	}
	s := stall(o, b.Reason, b.Message, recheck)
	if s.Status != nil {
		s.Events = append(s.Events, b.More...)
	}
	return s
}

// finish ends the reconcile with s. Its status write also carries what every write of a release
// at rest carries (settle) and marks a requestedAt acted on.
func finish(o *observation, s step) step {
	s.Done = true
	if o.Release.DeletionTimestamp != nil {
		return s
	}
	change, base := s.Status, settle(o)
	requested, asked := o.Release.Annotations[rollbackv1.RequestedAtAnnotation]
	s.Status = func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
		base(st, gen)
		if change != nil {
			change(st, gen)
		}
		if asked {
			st.LastHandledReconcileAt = requested
		}
	}
	return s
}

// settle is what every write of a release not being deleted carries: the Suspended condition set
// or removed, a failed version kept held across suspend and resume, and a rollback request that
// was taken away forgotten.
func settle(o *observation) statusChange {
	state := o.Suspend
	_, asked := o.Release.Annotations[rollbackv1.RollbackToAnnotation]
	return func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
		wasSuspended := conditions.Get(st.Conditions, conditions.Suspended) != nil
		suspend.Report(&st.Conditions, gen, state)
		keepHeldAcrossSuspend(st, gen, state.Suspended || wasSuspended)
		if !asked {
			st.LastHandledRollback = ""
		}
	}
}

// restingStatus is the status as settle leaves it, which the decisions of a release at rest read.
func restingStatus(o *observation) rollbackv1.ManifestReleaseStatus {
	st := *o.Release.Status.DeepCopy()
	settle(o)(&st, o.Release.Generation)
	return st
}

// keepHeldAcrossSuspend keeps a failed version held when the only spec change since it failed
// is suspending or resuming the release: spec.suspend bumps the generation, which otherwise
// counts as a change of spec that tries the version again.
func keepHeldAcrossSuspend(st *rollbackv1.ManifestReleaseStatus, generation int64, suspending bool) {
	if suspending && st.LastAttemptFailed && st.LastAttemptedGeneration != 0 && st.LastAttemptedGeneration == st.ObservedGeneration {
		st.LastAttemptedGeneration = generation
	}
}

func stalledOrReconciling(st rollbackv1.ManifestReleaseStatus) bool {
	return conditions.Get(st.Conditions, conditions.Stalled) != nil || conditions.Get(st.Conditions, conditions.Reconciling) != nil
}

func holdsFinalizer(mr *rollbackv1.ManifestRelease) bool {
	return slices.Contains(mr.Finalizers, rollbackv1.ManifestReleaseFinalizer)
}

func normal(reason, message string) event {
	return event{Type: corev1.EventTypeNormal, Reason: reason, Message: message}
}

func warning(reason, message string) event {
	return event{Type: corev1.EventTypeWarning, Reason: reason, Message: message}
}
