package reconcile

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// StatusClient is the part of a generated typed client, for one namespace, that a StatusWriter
// needs; every generated client of a kind with a status subresource has it.
type StatusClient[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// StatusWriter writes the status subresource of one kind as one field manager. Declare one per
// kind, beside its reconciler.
type StatusWriter[T Object[T], S any] struct {
	// Kind names the kind in errors.
	Kind string
	// FieldManager is the controller's name in managedFields.
	FieldManager string
	// Status points into an object's status.
	Status func(T) *S
	// ReturnConflicts, for a status that builds on what earlier reconciles decided (a phase, a
	// history, the time a failure began), never puts after's status on a live object that moved
	// on: a conflict is returned, and the reconcile it brings back decides again from the live
	// object. A live object that already holds the status is still no error.
	ReturnConflicts bool
}

// Write stores after's status unless it is semantically equal to before's: a reconcile that
// changed nothing writes nothing. On a conflict (the cache was behind the controller's own last
// write, or another write landed) it reads the live object and puts after's status on it, unless
// the live object already holds it (with ReturnConflicts it returns the conflict instead). It
// returns the object as stored and whether this call wrote it: Events and metrics of a change
// belong after a write that happened.
func (w StatusWriter[T, S]) Write(ctx context.Context, client StatusClient[T], before, after T) (T, bool, error) {
	return w.update(ctx, client, before, func(current T, conflict error) (T, bool, error) {
		switch {
		case equality.Semantic.DeepEqual(w.Status(current), w.Status(after)):
			return current, true, nil
		case conflict == nil:
			return after, false, nil
		case w.ReturnConflicts:
			return current, false, stopRetrying{conflict}
		}
		next := current.DeepCopy()
		*w.Status(next) = *w.Status(after)
		return next, false, nil
	})
}

// Change applies change to a copy of obj and writes the status it gives, unless that equals
// obj's. On a conflict it reads the live object and applies change to it again: for a status
// made of steps that each stand on their own (an operation's result, a request marked handled),
// written one after another from a copy that the previous write already made stale, where putting
// a whole status on the live object would undo the steps in between. change receives a copy to
// change, never the cache's object. It returns the object as stored and whether this call wrote
// it.
func (w StatusWriter[T, S]) Change(ctx context.Context, client StatusClient[T], obj T, change func(T)) (T, bool, error) {
	return w.update(ctx, client, obj, func(current T, _ error) (T, bool, error) {
		next := current.DeepCopy()
		change(next)
		return next, equality.Semantic.DeepEqual(w.Status(current), w.Status(next)), nil
	})
}

// update writes the object next makes of current: obj first, then, after each conflict, the live
// object, until a write is not refused as stale. next says skip when current needs no write, or
// returns stopRetrying to end with a conflict; it is given the conflict that made it read again.
func (w StatusWriter[T, S]) update(ctx context.Context, client StatusClient[T], obj T,
	next func(current T, conflict error) (T, bool, error)) (T, bool, error) {
	opts := metav1.UpdateOptions{FieldManager: w.FieldManager}
	current, stored, wrote := obj, obj, false
	var conflict error
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, skip, err := next(current, conflict)
		if err != nil || skip {
			stored = current
			return err
		}
		written, err := client.UpdateStatus(ctx, n, opts)
		if err == nil {
			stored, wrote = written, true
			return nil
		}
		if !apierrors.IsConflict(err) {
			return err
		}
		live, gerr := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		current, conflict = live, err
		return err
	})
	var stop stopRetrying
	if errors.As(err, &stop) {
		err = stop.err
	}
	if err != nil {
		var zero T
		return zero, false, fmt.Errorf("writing the status of %s %s/%s: %w", w.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return stored, wrote, nil
}

// stopRetrying carries a conflict out of retry.RetryOnConflict, which would retry it.
type stopRetrying struct{ err error }

func (s stopRetrying) Error() string { return s.err.Error() }
