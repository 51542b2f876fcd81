package testenv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// recordingT is a testing.TB whose failures and cleanups are recorded, to test helpers that fail
// a test.
type recordingT struct {
	testing.TB
	mu       sync.Mutex
	failures []string
	cleanups []func()
}

func (r *recordingT) Helper() {}

func (r *recordingT) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recordingT) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

func (r *recordingT) Cleanup(fn func()) { r.cleanups = append(r.cleanups, fn) }

func (r *recordingT) cleanup() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func (r *recordingT) failed() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.failures, "\n")
}

// runnerFunc is a Runner.
type runnerFunc func(ctx context.Context) error

func (f runnerFunc) Run(ctx context.Context) error { return f(ctx) }

func TestRunManagerStopsTheManagerWhenTheTestEnds(t *testing.T) {
	rt := &recordingT{TB: t}
	running, stopped := make(chan struct{}), make(chan struct{})
	RunManager(rt, runnerFunc(func(ctx context.Context) error {
		close(running)
		<-ctx.Done()
		close(stopped)
		return nil
	}))
	<-running
	select {
	case <-stopped:
		t.Fatal("stopped before the test ended")
	default:
	}
	rt.cleanup()
	<-stopped
	assert.Empty(t, rt.failed())
}

func TestRunManagerReportsAnErrorAndStopsOnce(t *testing.T) {
	rt := &recordingT{TB: t}
	stop := RunManager(rt, runnerFunc(func(ctx context.Context) error {
		<-ctx.Done()
		return errors.New("lease lost")
	}))
	stop()
	stop()
	rt.cleanup()
	assert.Equal(t, "manager stopped with an error: lease lost", rt.failed())
}

func TestRunManagerReportsAManagerThatDoesNotStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := &recordingT{TB: t}
		release := make(chan struct{})
		stop := RunManager(rt, runnerFunc(func(context.Context) error { <-release; return nil }))
		stop() // waits stopTimeout of the bubble's fake time
		assert.Contains(t, rt.failed(), "did not stop within 30s")
		close(release)
	})
}

// getter answers the nth Get with the nth ConfigMap, or an error while it has none.
type getter struct {
	mu      sync.Mutex
	answers []*corev1.ConfigMap
}

func (g *getter) Get(_ context.Context, name string, _ metav1.GetOptions) (*corev1.ConfigMap, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.answers) == 0 {
		return nil, errors.New("configmaps " + name + " not found")
	}
	cm := g.answers[0]
	if len(g.answers) > 1 {
		g.answers = g.answers[1:]
	}
	return cm, nil
}

func configMap(phase string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"phase": phase}}
}

func TestWaitForObjectReturnsTheFirstObjectThatMatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &getter{answers: []*corev1.ConfigMap{configMap("pending"), configMap("pending"), configMap("ready"), configMap("later")}}
		got := WaitForObject(t, time.Minute, g, "c", func(cm *corev1.ConfigMap) bool { return cm.Data["phase"] == "ready" })
		assert.Equal(t, "ready", got.Data["phase"])
	})
}

func TestWaitForObjectShowsWhatItSawLast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := &recordingT{TB: t}
		cm := configMap("pending")
		g := &getter{answers: []*corev1.ConfigMap{cm}}
		WaitForObject(rt, time.Second, g, "c", func(*corev1.ConfigMap) bool { return false })
		assert.Contains(t, rt.failed(), "*v1.ConfigMap c: condition not met within 1s")

		rt = &recordingT{TB: t}
		WaitForObject(rt, time.Second, &getter{}, "c", func(*corev1.ConfigMap) bool { return true })
		assert.Contains(t, rt.failed(), "configmaps c not found", "the last error, when nothing was seen")
	})
}

func TestWaitFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		WaitFor(t, time.Minute, func() (bool, error) { calls++; return calls == 3, nil })
		assert.Equal(t, 3, calls)

		rt := &recordingT{TB: t}
		WaitFor(rt, time.Second, func() (bool, error) { return false, errors.New("no pods yet") }, "pods of %s", "web")
		require.Contains(t, rt.failed(), "pods of web: condition not met within 1s: no pods yet")
	})
}

func TestStatusOfShowsTheStatusOnly(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{"big": "x"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	assert.Equal(t, `{"phase":"Running"}`, statusOf(pod))
}

func TestStopHooksRunOnceInReverseOrder(t *testing.T) {
	var order []string
	OnStop(func() { order = append(order, "gitea") })
	OnStop(func() { order = append(order, "shared controller") })
	runStopHooks()
	runStopHooks()
	assert.Equal(t, []string{"shared controller", "gitea"}, order, "what started last stops first")
}

func TestBackgroundStopsOnceAndAnswersTheSameEachTime(t *testing.T) {
	runs := 0
	stop := Background(runnerFunc(func(ctx context.Context) error {
		runs++
		<-ctx.Done()
		return errors.New("lease lost")
	}))
	assert.EqualError(t, stop(), "manager stopped with an error: lease lost")
	assert.EqualError(t, stop(), "manager stopped with an error: lease lost")
	assert.Equal(t, 1, runs)
}
