// Package scmobjects fills the status of ScmProviders and ScmRepositories: Ready when the spec
// and the credentials it names are usable, Stalled with a reason and a message a person can act
// on when they are not. It checks what the cluster holds; it never calls the SCM or the git
// server, so a check spends none of their API quota.
package scmobjects

import (
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
)

// FieldManager writes ScmProvider and ScmRepository status; the same name as for CommitStatus
// status, since one controller owns all three.
const FieldManager = "commitstatus-controller"

// DefaultRecheckInterval is how often an object waiting on something without events is looked at again.
const DefaultRecheckInterval = time.Minute

// Condition reasons of ScmProviders and ScmRepositories, besides those of resolve (a missing or
// incomplete Secret, an unsupported type, an invalid spec) and suspend.
const (
	// ReasonValid: the spec and the credentials it names are usable.
	ReasonValid = "Valid"
	// ReasonInvalidURL: a ScmRepository's url breaks the API's rules.
	ReasonInvalidURL = "InvalidURL"
	// ReasonAuthDoesNotMatchURL: ssh auth with an https URL, or token/basic auth with an ssh URL.
	ReasonAuthDoesNotMatchURL = "AuthDoesNotMatchURL"
	// ReasonProviderNotReady: the ScmRepository's ScmProvider is not Ready.
	ReasonProviderNotReady = "ScmProviderNotReady"
	// ReasonWaitingForProvider: the ScmProvider has not been checked at its current generation yet.
	ReasonWaitingForProvider = "WaitingForScmProvider"
)

// state is the kind of verdict.
type state int

const (
	stateReady state = iota
	// stateStalled needs a person; an event on the object or what it names brings it back.
	stateStalled
	// stateWaiting ends on its own, with an event on a referenced object.
	stateWaiting
	// stateNotReady is neither progress nor a person's problem: a transient error (err is set,
	// and the queue retries with backoff), or a suspended ScmProvider.
	stateNotReady
)

// verdict is what a check found.
type verdict struct {
	state   state
	reason  string
	message string
	// recheck is set when the fix lies where no event reaches the controller (a Secret that is
	// not watched, a ConfigMap, RBAC): the object is looked at again after the recheck interval.
	recheck bool
	// err is the transient error of stateNotReady, if any.
	err error
}

func ready(message string) verdict {
	return verdict{state: stateReady, reason: ReasonValid, message: message}
}

func stalled(reason, message string) verdict {
	return verdict{state: stateStalled, reason: reason, message: message}
}

// apply writes the verdict into the kstatus conditions.
func (v verdict) apply(conds *[]metav1.Condition, generation int64) {
	switch v.state {
	case stateReady:
		conditions.MarkReady(conds, generation, v.reason, v.message)
	case stateStalled:
		conditions.MarkStalled(conds, generation, v.reason, v.message)
	case stateWaiting:
		conditions.MarkReconciling(conds, generation, v.reason, v.message)
	default:
		conditions.MarkNotReady(conds, generation, v.reason, v.message)
	}
}

// result tells the queue when to look again: with backoff after a transient error, after the
// recheck interval when no event would come, otherwise only on the next event.
func (v verdict) result(recheck time.Duration) (controller.Result, error) {
	switch {
	case v.err != nil:
		return controller.Result{}, v.err
	case v.recheck:
		return controller.Result{RequeueAfter: recheck}, nil
	}
	return controller.Result{}, nil
}

// owns reports whether obj is this controller's to write: with --watch-label-selector, shards
// split ScmProviders and ScmRepositories by label as they split CommitStatuses, so each object
// has one writer.
func owns(selector labels.Selector, obj metav1.Object) bool {
	return selector == nil || selector.Matches(labels.Set(obj.GetLabels()))
}

// announce emits an Event when readiness or suspension changed; never for a reconcile that
// changed nothing.
func announce(recorder record.EventRecorder, obj runtime.Object, before, after []metav1.Condition) {
	if recorder == nil {
		return
	}
	if s := conditions.Get(after, conditions.Suspended); s != nil && !sameCondition(s, conditions.Get(before, conditions.Suspended)) {
		recorder.Event(obj, corev1.EventTypeNormal, s.Reason, s.Message)
	}
	r := conditions.Get(after, conditions.Ready)
	if r == nil || sameCondition(r, conditions.Get(before, conditions.Ready)) {
		return
	}
	eventType := corev1.EventTypeNormal
	if r.Status != metav1.ConditionTrue && !conditions.IsTrue(after, conditions.Reconciling) {
		eventType = corev1.EventTypeWarning
	}
	recorder.Event(obj, eventType, r.Reason, r.Message)
}

// logChange logs a change of readiness; messages name objects and keys, never a value.
func logChange(log *slog.Logger, kind string, obj metav1.Object, before, after []metav1.Condition) {
	r := conditions.Get(after, conditions.Ready)
	if log == nil || r == nil || sameCondition(r, conditions.Get(before, conditions.Ready)) {
		return
	}
	log.Info(kind+" changed state", "key", obj.GetNamespace()+"/"+obj.GetName(),
		"ready", r.Status, "reason", r.Reason, "message", r.Message)
}

func sameCondition(a, b *metav1.Condition) bool {
	return a != nil && b != nil && a.Status == b.Status && a.Reason == b.Reason
}
