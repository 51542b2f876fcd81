// Package ratelimit keeps Sluice's calls to an SCM inside the SCM's quota.
//
// Each ScmProvider object gets one Limiter, shared by every reconciler in the process through a
// Registry keyed by namespace/name. A Limiter is a token bucket plus a pause: when the SCM says
// stop (429, a rate-limit 403, or a remaining quota of zero) every caller waits until the SCM's
// reset time instead of sending requests that would be refused. Transport applies a Limiter to
// an http.RoundTripper and retries what is safe to retry.
//
// One misbehaving object cannot spend the quota of the others faster than the bucket allows, and
// a burst of work queues behind the bucket instead of turning into a storm of 429s.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Limits configure a token bucket: QPS requests per second on average, Burst at most at once.
// A zero QPS means no client-side limit; the SCM's own signals are still obeyed.
type Limits struct {
	QPS   float64
	Burst int
}

// Validate reports limits that cannot configure a bucket.
func (l Limits) Validate() error {
	if math.IsNaN(l.QPS) || math.IsInf(l.QPS, 0) || l.QPS < 0 {
		return fmt.Errorf("rate limit qps must be a finite number >= 0, got %v", l.QPS)
	}
	if l.Burst < 0 {
		return fmt.Errorf("rate limit burst must be >= 0, got %d", l.Burst)
	}
	return nil
}

// OrDefault fills what l leaves unset from d: all of it when l is the zero value, the burst when
// only the rate is given.
func (l Limits) OrDefault(d Limits) Limits {
	if l == (Limits{}) {
		return d
	}
	if l.Burst == 0 {
		l.Burst = max(d.Burst, 1)
	}
	return l
}

// Quota is the SCM's own view of the budget, read from its rate-limit headers.
type Quota struct {
	// Known is false until a response carried rate-limit headers.
	Known bool
	// Limit is the request budget of the current window.
	Limit int64
	// Remaining is how many requests the SCM will still accept in the current window.
	Remaining int64
	// Reset is when the SCM refills the budget.
	Reset time.Time
}

// Clock is the time source of a Limiter and a Transport. Tests replace it to observe waits.
type Clock interface {
	Now() time.Time
	// Sleep waits for d or until ctx is done.
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// RealClock is the wall clock.
var RealClock Clock = realClock{}

// PausedError is returned instead of sending a request while the SCM has told us to stop for
// longer than the caller can wait. RetryAfter says when to try again.
type PausedError struct {
	Until      time.Time
	RetryAfter time.Duration
	Reason     string
}

func (e *PausedError) Error() string {
	return fmt.Sprintf("requests to this SCM are paused for %s (%s); no request was sent",
		e.RetryAfter.Round(time.Second), e.Reason)
}

// IsPaused reports whether err comes from a paused Limiter, and for how long to wait.
func IsPaused(err error) (time.Duration, bool) {
	var p *PausedError
	if errors.As(err, &p) {
		return p.RetryAfter, true
	}
	return 0, false
}

// maxPause bounds a pause taken from server headers, so a bogus reset time cannot stop an SCM
// for days. GitHub and GitLab windows are at most an hour.
const maxPause = time.Hour

// Limiter is the request budget of one SCM provider object.
type Limiter struct {
	bucket *rate.Limiter
	clock  Clock

	mu          sync.Mutex
	pausedUntil time.Time
	pauseReason string
	quota       Quota
	// hintless counts consecutive throttles that came without Retry-After or reset headers,
	// so the pause grows instead of retrying at a fixed pace.
	hintless int

	throttled atomic.Int64
	requests  atomic.Int64
}

// NewLimiter returns a Limiter with the given limits and the wall clock.
func NewLimiter(l Limits) *Limiter {
	return NewLimiterWithClock(l, RealClock)
}

// NewLimiterWithClock returns a Limiter whose pauses follow clock.
func NewLimiterWithClock(l Limits, clock Clock) *Limiter {
	l = normalise(l)
	r := rate.Inf
	if l.QPS > 0 {
		r = rate.Limit(l.QPS)
	}
	// A new bucket starts full: a fresh process may send a burst at once.
	return &Limiter{bucket: rate.NewLimiter(r, l.Burst), clock: clock}
}

// SetLimits changes the bucket, for example after the ScmProvider's spec.rateLimit changed.
func (l *Limiter) SetLimits(lim Limits) {
	if lim.QPS <= 0 {
		l.bucket.SetLimit(rate.Inf)
		return
	}
	burst := max(lim.Burst, 1)
	l.bucket.SetLimit(rate.Limit(lim.QPS))
	l.bucket.SetBurst(burst)
}

// Limits returns the bucket's current limits.
func (l *Limiter) Limits() Limits {
	if l.bucket.Limit() == rate.Inf {
		return Limits{}
	}
	return Limits{QPS: float64(l.bucket.Limit()), Burst: l.bucket.Burst()}
}

// Wait blocks until a request may be sent. While the Limiter is paused it waits for the pause
// when the pause ends within maxWait and before ctx's deadline; otherwise it returns a
// *PausedError at once, so no request is sent that the SCM would refuse.
func (l *Limiter) Wait(ctx context.Context, maxWait time.Duration) error {
	for {
		until, reason := l.pause()
		now := l.clock.Now()
		if !until.After(now) {
			break
		}
		wait := until.Sub(now)
		deadline, hasDeadline := ctx.Deadline()
		if wait > maxWait || (hasDeadline && deadline.Before(until)) {
			return &PausedError{Until: until, RetryAfter: wait, Reason: reason}
		}
		if err := l.clock.Sleep(ctx, wait); err != nil {
			return err
		}
	}
	if err := l.waitForToken(ctx); err != nil {
		return err
	}
	l.requests.Add(1)
	return nil
}

// waitForToken takes a token from the bucket. When the wait would outlast ctx's deadline it
// returns a *PausedError at once, so the caller requeues instead of failing with a timeout.
func (l *Limiter) waitForToken(ctx context.Context) error {
	r := l.bucket.Reserve()
	if !r.OK() {
		return errors.New("the client-side rate limit has a burst of zero")
	}
	delay := r.Delay()
	if delay == 0 {
		return nil
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < delay {
		r.Cancel()
		return &PausedError{Until: time.Now().Add(delay), RetryAfter: delay,
			Reason: "the client-side rate limit of this ScmProvider has requests queued ahead"}
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		r.Cancel()
		return ctx.Err()
	}
}

func (l *Limiter) pause() (time.Time, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pausedUntil, l.pauseReason
}

// PauseUntil stops every caller until t. A pause never shortens an existing longer one.
func (l *Limiter) PauseUntil(t time.Time, reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pauseUntilLocked(t, reason)
}

func (l *Limiter) pauseUntilLocked(t time.Time, reason string) {
	if limit := l.clock.Now().Add(maxPause); t.After(limit) {
		t = limit
	}
	if t.After(l.pausedUntil) {
		l.pausedUntil = t
		l.pauseReason = reason
	}
}

// PausedUntil returns the end of the current pause, or the zero time when not paused.
func (l *Limiter) PausedUntil() time.Time {
	until, _ := l.pause()
	if !until.After(l.clock.Now()) {
		return time.Time{}
	}
	return until
}

// Quota returns the SCM's budget as last reported in its headers.
func (l *Limiter) Quota() Quota {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.quota
}

// Throttled counts the responses that told this Limiter to stop (429 or rate-limit 403).
func (l *Limiter) Throttled() int64 { return l.throttled.Load() }

// Requests counts the requests this Limiter let through.
func (l *Limiter) Requests() int64 { return l.requests.Load() }

// Registry holds one Limiter per key (an ScmProvider's namespace/name) for a whole process.
type Registry struct {
	mu       sync.Mutex
	limiters map[string]*Limiter
	clock    Clock
}

// NewRegistry returns an empty Registry on the wall clock.
func NewRegistry() *Registry {
	return &Registry{limiters: map[string]*Limiter{}, clock: RealClock}
}

// Default is the process-wide Registry that providers use unless told otherwise.
var Default = NewRegistry()

// Get returns the Limiter for key, creating it with limits, or updating its limits when they changed.
func (r *Registry) Get(key string, limits Limits) *Limiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l, ok := r.limiters[key]; ok {
		if l.Limits() != normalise(limits) {
			l.SetLimits(limits)
		}
		return l
	}
	l := NewLimiterWithClock(limits, r.clock)
	r.limiters[key] = l
	return l
}

func normalise(l Limits) Limits {
	if l.QPS <= 0 {
		return Limits{}
	}
	l.Burst = max(l.Burst, 1)
	return l
}

// Forget drops the Limiter of a deleted ScmProvider.
func (r *Registry) Forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.limiters, key)
}

// Each calls fn for every Limiter, for example to export the remaining quota as a metric.
func (r *Registry) Each(fn func(key string, l *Limiter)) {
	r.mu.Lock()
	snapshot := make(map[string]*Limiter, len(r.limiters))
	for k, v := range r.limiters {
		snapshot[k] = v
	}
	r.mu.Unlock()
	for k, v := range snapshot {
		fn(k, v)
	}
}
