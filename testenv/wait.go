package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pollInterval is how often WaitFor and WaitForObject look.
const pollInterval = 50 * time.Millisecond

// Wait polls cond every 50ms until it returns true or an error, or timeout passes.
func Wait(ctx context.Context, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var lastErr error
	for {
		ok, err := cond(ctx)
		if err == nil && ok {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("condition not met within %s: %w", timeout, lastErr)
			}
			return fmt.Errorf("condition not met within %s", timeout)
		case <-tick.C:
		}
	}
}

// WaitFor polls cond until it returns true, and fails the test when timeout passes first, with
// msgAndArgs (a format and its arguments) and cond's last error. An error from cond is not the
// end: the object may not exist yet. It waits for an observable signal (a status field, a
// counter), never for time to pass.
func WaitFor(t testing.TB, timeout time.Duration, cond func() (bool, error), msgAndArgs ...any) {
	t.Helper()
	if err := Wait(context.Background(), timeout, func(context.Context) (bool, error) { return cond() }); err != nil {
		t.Fatalf("%s: %v", message(msgAndArgs), err)
	}
}

// Getter is the part of a generated typed client that WaitForObject needs; every one has it.
type Getter[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
}

// WaitForObject reads the named object through client until cond holds for it, and returns it.
// When timeout passes first it fails the test, showing the status it saw last.
func WaitForObject[T any](t testing.TB, timeout time.Duration, client Getter[T], name string, cond func(T) bool) T {
	t.Helper()
	var last T
	seen := false
	err := Wait(context.Background(), timeout, func(ctx context.Context) (bool, error) {
		obj, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last, seen = obj, true
		return cond(obj), nil
	})
	if err != nil {
		if !seen {
			t.Fatalf("%T %s: %v", last, name, err)
		}
		t.Fatalf("%T %s: %v; last seen status: %s", last, name, err, statusOf(last))
	}
	return last
}

// statusOf renders an object's status, the part a wait is about, without its metadata.
func statusOf(obj any) string {
	raw, err := json.Marshal(obj)
	if err != nil {
		return fmt.Sprintf("%+v", obj)
	}
	var fields struct {
		Status json.RawMessage `json:"status"`
	}
	if json.Unmarshal(raw, &fields) != nil || fields.Status == nil {
		return string(raw)
	}
	return string(fields.Status)
}

func message(msgAndArgs []any) string {
	if len(msgAndArgs) == 0 {
		return "condition not met"
	}
	if format, ok := msgAndArgs[0].(string); ok {
		return fmt.Sprintf(format, msgAndArgs[1:]...)
	}
	return fmt.Sprint(msgAndArgs...)
}
