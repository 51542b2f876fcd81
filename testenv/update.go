package testenv

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// updateBackoff outlasts a controller that writes status several times a second: ten tries over
// about ten seconds.
var updateBackoff = wait.Backoff{Steps: 10, Duration: 10 * time.Millisecond, Factor: 2, Jitter: 0.1}

// GetUpdater is the part of a typed client that Update needs; every generated client has it.
type GetUpdater[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// Update reads the named object, changes it with mutate and writes it back, reading again after a
// conflict. A test changes objects that a running controller writes too (status, finalizers), so a
// single read-modify-write races with it and fails now and then with "the object has been
// modified".
func Update[T any](ctx context.Context, client GetUpdater[T], name string, mutate func(T)) (T, error) {
	var updated T
	err := retry.RetryOnConflict(updateBackoff, func() error {
		current, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(current)
		updated, err = client.Update(ctx, current, metav1.UpdateOptions{})
		return err
	})
	return updated, err
}
