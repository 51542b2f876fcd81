package ratelimit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"syscall"
	"time"
)

// Defaults of a Transport.
const (
	DefaultMaxRetries     = 3
	DefaultMinBackoff     = 500 * time.Millisecond
	DefaultMaxBackoff     = 10 * time.Second
	DefaultMaxWait        = 30 * time.Second
	DefaultAttemptTimeout = 30 * time.Second
	// maxReplayBody bounds the request body kept in memory so it can be sent again.
	maxReplayBody = 8 << 20
)

// Transport sends requests through a Limiter.
//
// It waits for a token before each attempt; obeys 429, rate-limit 403s, Retry-After and the
// X-RateLimit-*/RateLimit-* headers by pausing the Limiter; and retries with bounded, jittered
// exponential backoff:
//   - a throttled request (429 or rate-limit 403), whatever its method: the SCM did not act on it;
//   - a 5xx answer or a timeout or reset connection, for idempotent methods only (GET, HEAD,
//     OPTIONS, PUT, DELETE), since a POST or PATCH may have taken effect.
//
// When the pause outlasts MaxWait (or the request's deadline), the request fails at once with a
// *PausedError wrapped in the returned error, without reaching the network.
type Transport struct {
	Base    http.RoundTripper
	Limiter *Limiter

	// MaxRetries bounds the attempts after the first. Zero means DefaultMaxRetries; negative, none.
	MaxRetries int
	// MinBackoff and MaxBackoff bound the wait between retries of 5xx and timeouts.
	MinBackoff, MaxBackoff time.Duration
	// MaxWait is the longest pause a request waits for in line.
	MaxWait time.Duration
	// AttemptTimeout bounds one attempt, so a hung server counts as a timeout and is retried.
	AttemptTimeout time.Duration
	// Clock is the time source for backoff sleeps; nil means the wall clock.
	Clock Clock
}

// NewTransport returns a Transport with the defaults.
func NewTransport(base http.RoundTripper, l *Limiter) *Transport {
	return &Transport{Base: base, Limiter: l}
}

func (t *Transport) maxRetries() int {
	switch {
	case t.MaxRetries < 0:
		return 0
	case t.MaxRetries == 0:
		return DefaultMaxRetries
	}
	return t.MaxRetries
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func (t *Transport) clock() Clock {
	if t.Clock == nil {
		return RealClock
	}
	return t.Clock
}

func (t *Transport) base() http.RoundTripper {
	if t.Base == nil {
		return http.DefaultTransport
	}
	return t.Base
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	replayable, err := ensureReplayable(req)
	if err != nil {
		return nil, err
	}
	retries := t.maxRetries()
	maxWait := orDefault(t.MaxWait, DefaultMaxWait)

	for attempt := 0; ; attempt++ {
		if t.Limiter != nil {
			if err := t.Limiter.Wait(ctx, maxWait); err != nil {
				return nil, err
			}
		}
		resp, err := t.attempt(req)
		canRetry := attempt < retries && replayable && ctx.Err() == nil

		if err != nil {
			if canRetry && idempotent(req.Method) && retryableNetError(err) {
				if err := t.clock().Sleep(ctx, t.backoff(attempt)); err != nil {
					return nil, err
				}
				continue
			}
			return nil, err
		}

		throttled := false
		if t.Limiter != nil {
			_, throttled = t.Limiter.Observe(resp)
		} else {
			throttled = resp.StatusCode == http.StatusTooManyRequests
		}
		switch {
		case throttled:
			if !canRetry || t.Limiter == nil || !t.pauseFits(ctx, maxWait) {
				return resp, nil
			}
			discard(resp)
			// The next Limiter.Wait sleeps out the pause Observe just set.
		case resp.StatusCode >= 500 && canRetry && idempotent(req.Method):
			wait := t.backoff(attempt)
			if ra, ok := RetryAfter(resp.Header, t.clock().Now()); ok && ra > wait && ra <= maxWait {
				wait = ra
			}
			discard(resp)
			if err := t.clock().Sleep(ctx, wait); err != nil {
				return nil, err
			}
		default:
			return resp, nil
		}
	}
}

// pauseFits reports whether waiting out the current pause is allowed for this request.
func (t *Transport) pauseFits(ctx context.Context, maxWait time.Duration) bool {
	until := t.Limiter.PausedUntil()
	if until.IsZero() {
		return true
	}
	if until.Sub(t.clock().Now()) > maxWait {
		return false
	}
	deadline, ok := ctx.Deadline()
	return !ok || !deadline.Before(until)
}

func (t *Transport) attempt(req *http.Request) (*http.Response, error) {
	r := req
	if req.GetBody != nil && req.Body != nil && req.Body != http.NoBody {
		body, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("rewinding the request body: %w", err)
		}
		r = req.Clone(req.Context())
		r.Body = body
	}
	ctx, cancel := context.WithTimeout(r.Context(), orDefault(t.AttemptTimeout, DefaultAttemptTimeout))
	resp, err := t.base().RoundTrip(r.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// backoff is exponential from MinBackoff, capped at MaxBackoff, with jitter over its upper half
// so that callers that failed together do not retry together.
func (t *Transport) backoff(attempt int) time.Duration {
	lo := orDefault(t.MinBackoff, DefaultMinBackoff)
	hi := orDefault(t.MaxBackoff, DefaultMaxBackoff)
	d := lo << min(attempt, 20)
	if d > hi || d <= 0 {
		d = hi
	}
	half := d / 2
	return half + rand.N(half+1)
}

func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete, "":
		return true
	}
	return false
}

func retryableNetError(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, io.ErrUnexpectedEOF)
}

// ensureReplayable makes sure the body can be sent again, buffering small bodies that the caller
// did not make rewindable. It reports false when the body cannot be replayed.
func ensureReplayable(req *http.Request) (bool, error) {
	if req.Body == nil || req.Body == http.NoBody || req.GetBody != nil {
		return true, nil
	}
	if req.ContentLength > maxReplayBody {
		return false, nil
	}
	data, err := io.ReadAll(io.LimitReader(req.Body, maxReplayBody+1))
	closeErr := req.Body.Close()
	if err != nil {
		return false, fmt.Errorf("reading the request body: %w", err)
	}
	if closeErr != nil {
		return false, fmt.Errorf("closing the request body: %w", closeErr)
	}
	if len(data) > maxReplayBody {
		return false, fmt.Errorf("request body larger than %d bytes", maxReplayBody)
	}
	req.Body = io.NopCloser(bytes.NewReader(data))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	return true, nil
}

func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
