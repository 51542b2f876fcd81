package apply

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/manifest"
)

// Judge decides whether one object is done: its health, or for test objects something more
// specific (a Job passes when complete). A nil object has not been seen.
type Judge func(ref manifest.Ref, obj *unstructured.Unstructured) health.Result

// Pending is an object that is not healthy yet, with what its health says.
type Pending struct {
	Object manifest.Ref
	Health health.Result
}

// TimeoutError lists what was not healthy when the time ran out.
type TimeoutError struct {
	After   time.Duration
	Pending []Pending
}

func (e *TimeoutError) Error() string {
	parts := make([]string, 0, min(len(e.Pending), 5))
	for i, p := range e.Pending {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(e.Pending)-5))
			break
		}
		parts = append(parts, fmt.Sprintf("%s is %s (%s)", p.Object, p.Health.Status, p.Health.Message))
	}
	return fmt.Sprintf("not healthy after %s: %s", e.After, strings.Join(parts, "; "))
}

// FailedError is an object whose health is Failed; waiting for it is pointless.
type FailedError struct {
	Object manifest.Ref
	Health health.Result
}

func (e *FailedError) Error() string {
	return fmt.Sprintf("%s failed: %s", e.Object, e.Health.Message)
}

// Wait returns once judge says every ref is Current, a *FailedError as soon as one is Failed,
// or a *TimeoutError after timeout. Objects carry labels, which select them when listing.
func (a *Applier) Wait(ctx context.Context, refs []manifest.Ref, labels map[string]string, timeout time.Duration, judge Judge) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pending := slices.Clone(refs)
	var last []Pending
	err := a.poll(ctx, func() (bool, error) {
		var err error
		if last, err = a.Pending(ctx, pending, labels, judge); err != nil {
			return false, err
		}
		pending = pending[:0]
		for _, p := range last {
			pending = append(pending, p.Object)
		}
		return len(pending) == 0, nil
	})
	if ctx.Err() != nil && len(pending) > 0 {
		if parent := context.Cause(ctx); parent == context.DeadlineExceeded {
			return &TimeoutError{After: timeout, Pending: last}
		}
	}
	return err
}

// Pending reads refs once and returns those judge does not call Current yet, or a
// *FailedError for the first that is Failed: one round of Wait, for a caller that waits between
// rounds itself (a release looks again in a later reconcile rather than hold a worker).
func (a *Applier) Pending(ctx context.Context, refs []manifest.Ref, labels map[string]string, judge Judge) ([]Pending, error) {
	if judge == nil {
		judge = a.judgeHealth
	}
	live, err := a.read(ctx, refs, labels)
	if err != nil {
		return nil, err
	}
	var pending []Pending
	for _, ref := range refs {
		res := judge(ref, live[ref.ID()])
		switch res.Status {
		case health.Current:
			continue
		case health.Failed:
			return nil, &FailedError{Object: ref, Health: res}
		}
		pending = append(pending, Pending{Object: ref, Health: res})
	}
	return pending, nil
}

func (a *Applier) judgeHealth(_ manifest.Ref, obj *unstructured.Unstructured) health.Result {
	if obj == nil {
		return health.Result{Status: health.NotFound, Message: "not found"}
	}
	return a.Health(obj)
}

// read lists each resource and namespace of refs once, selecting by labels, and returns the
// objects found by ID.
func (a *Applier) read(ctx context.Context, refs []manifest.Ref, labels map[string]string) (map[string]*unstructured.Unstructured, error) {
	type group struct {
		kind      manifest.Ref
		namespace string
	}
	groups := map[group]bool{}
	for _, r := range refs {
		groups[group{kind: manifest.Ref{Group: r.Group, Version: r.Version, Kind: r.Kind}, namespace: r.Namespace}] = true
	}
	selector := k8slabels.SelectorFromSet(labels).String()
	found := map[string]*unstructured.Unstructured{}
	for g := range groups {
		ri, err := a.resource(manifest.Ref{Group: g.kind.Group, Version: g.kind.Version, Kind: g.kind.Kind, Namespace: g.namespace})
		if err != nil {
			return nil, &Error{Object: g.kind, Err: err}
		}
		list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return nil, &Error{Object: g.kind, Err: err}
		}
		for i := range list.Items {
			obj := &list.Items[i]
			obj.SetAPIVersion(g.kind.GroupVersionKind().GroupVersion().String())
			obj.SetKind(g.kind.Kind)
			found[manifest.RefOf(obj).ID()] = obj
		}
	}
	return found, nil
}
