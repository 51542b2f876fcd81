package ratelimit

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock advances only when something sleeps on it, and records every sleep.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock {
	// Real "now", so that context deadlines compare meaningfully with pauses; whole seconds, so
	// that reset times given in Unix seconds convert to exact durations.
	return &fakeClock{now: time.Now().Truncate(time.Second)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// scripted answers the n-th request with the n-th handler and counts requests.
type scripted struct {
	t        *testing.T
	mu       sync.Mutex
	handlers []http.HandlerFunc
	bodies   []string
	calls    atomic.Int64
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(s.calls.Add(1)) - 1
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, string(body))
	s.mu.Unlock()
	if n >= len(s.handlers) {
		s.t.Errorf("unexpected request %d: %s %s", n+1, r.Method, r.URL.Path)
		w.WriteHeader(http.StatusTeapot)
		return
	}
	s.handlers[n](w, r)
}

func status(code int, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.WriteHeader(code)
	}
}

func newTestTransport(t *testing.T, handlers ...http.HandlerFunc) (*Transport, *scripted, *fakeClock, string) {
	t.Helper()
	s := &scripted{t: t, handlers: handlers}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	clock := newFakeClock()
	lim := NewLimiterWithClock(Limits{}, clock)
	tr := &Transport{Base: srv.Client().Transport, Limiter: lim, Clock: clock}
	return tr, s, clock, srv.URL
}

func do(t *testing.T, tr http.RoundTripper, method, url, body string) (*http.Response, error) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, url, r)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	if resp != nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	return resp, err
}

func TestTransportWaitsOutRetryAfterThenRetries(t *testing.T) {
	tr, srv, clock, url := newTestTransport(t,
		status(http.StatusTooManyRequests, "Retry-After", "7"),
		status(http.StatusOK),
	)
	resp, err := do(t, tr, http.MethodPost, url, `{"state":"success"}`)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, int64(2), srv.calls.Load())
	assert.Equal(t, []time.Duration{7 * time.Second}, clock.Sleeps())
	assert.Equal(t, int64(1), tr.Limiter.Throttled())
	assert.Equal(t, []string{`{"state":"success"}`, `{"state":"success"}`}, srv.bodies,
		"a throttled POST is sent again with the same body")
}

func TestTransportPausesUntilResetWhenQuotaIsExhausted(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		remaining, limit, reset string
		status                  int
		wantThrottledAndRetried bool
	}{
		{"github 200 with no quota left", "X-RateLimit-Remaining", "X-RateLimit-Limit", "X-RateLimit-Reset", http.StatusOK, false},
		{"gitlab 200 with no quota left", "RateLimit-Remaining", "RateLimit-Limit", "RateLimit-Reset", http.StatusOK, false},
		{"github primary limit 403", "X-RateLimit-Remaining", "X-RateLimit-Limit", "X-RateLimit-Reset", http.StatusForbidden, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			reset := clock.Now().Add(20 * time.Second).Unix()
			exhausted := status(tc.status,
				tc.remaining, "0", tc.limit, "5000", tc.reset, strconv.FormatInt(reset, 10))
			handlers := []http.HandlerFunc{exhausted, status(http.StatusOK, tc.remaining, "4999", tc.limit, "5000")}
			s := &scripted{t: t, handlers: handlers}
			srv := httptest.NewServer(s)
			defer srv.Close()
			tr := &Transport{Base: srv.Client().Transport, Limiter: NewLimiterWithClock(Limits{}, clock), Clock: clock}

			resp, err := do(t, tr, http.MethodGet, srv.URL, "")
			require.NoError(t, err)
			if !tc.wantThrottledAndRetried {
				assert.Equal(t, tc.status, resp.StatusCode)
				q := tr.Limiter.Quota()
				assert.Equal(t, Quota{Known: true, Limit: 5000, Remaining: 0, Reset: time.Unix(reset, 0)}, q)
				// The next request waits for the reset instead of being refused.
				resp, err = do(t, tr, http.MethodGet, srv.URL, "")
				require.NoError(t, err)
			}
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, []time.Duration{20 * time.Second}, clock.Sleeps())
			assert.Equal(t, int64(4999), tr.Limiter.Quota().Remaining)
			assert.Equal(t, int64(2), s.calls.Load())
		})
	}
}

func TestTransportFailsFastWhilePausedForLongerThanMaxWait(t *testing.T) {
	tr, srv, clock, url := newTestTransport(t,
		status(http.StatusTooManyRequests, "Retry-After", "3600"),
	)
	resp, err := do(t, tr, http.MethodGet, url, "")
	require.NoError(t, err)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the 429 is handed back when the pause is too long to wait")

	_, err = do(t, tr, http.MethodGet, url, "")
	var paused *PausedError
	require.ErrorAs(t, err, &paused)
	assert.Equal(t, time.Hour, paused.RetryAfter)
	assert.Equal(t, int64(1), srv.calls.Load(), "no request reaches the SCM while paused")
	assert.Empty(t, clock.Sleeps())
}

func TestTransportRespectsTheRequestDeadlineWhilePaused(t *testing.T) {
	tr, srv, _, url := newTestTransport(t, status(http.StatusTooManyRequests, "Retry-After", "20"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, int64(1), srv.calls.Load())
}

func TestTransportForbiddenWithoutRateHeadersIsNotThrottled(t *testing.T) {
	tr, srv, clock, url := newTestTransport(t,
		status(http.StatusForbidden, "X-RateLimit-Remaining", "4000"),
	)
	resp, err := do(t, tr, http.MethodGet, url, "")
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Equal(t, int64(1), srv.calls.Load())
	assert.Equal(t, int64(0), tr.Limiter.Throttled())
	assert.True(t, tr.Limiter.PausedUntil().IsZero())
	assert.Empty(t, clock.Sleeps())
}

func TestTransportRetriesServerErrorsOnlyForIdempotentMethods(t *testing.T) {
	t.Run("GET is retried a bounded number of times", func(t *testing.T) {
		tr, srv, clock, url := newTestTransport(t,
			status(http.StatusBadGateway), status(http.StatusServiceUnavailable),
			status(http.StatusInternalServerError), status(http.StatusBadGateway),
		)
		tr.MaxRetries = 3
		resp, err := do(t, tr, http.MethodGet, url, "")
		require.NoError(t, err)
		assert.Equal(t, http.StatusBadGateway, resp.StatusCode, "the last answer is returned once retries are spent")
		assert.Equal(t, int64(4), srv.calls.Load())
		sleeps := clock.Sleeps()
		require.Len(t, sleeps, 3)
		for i, d := range sleeps {
			ceiling := DefaultMinBackoff << i
			assert.GreaterOrEqual(t, d, ceiling/2, "retry %d", i)
			assert.LessOrEqual(t, d, ceiling, "retry %d", i)
		}
	})
	t.Run("GET succeeds after a 503", func(t *testing.T) {
		tr, srv, _, url := newTestTransport(t, status(http.StatusServiceUnavailable), status(http.StatusOK))
		resp, err := do(t, tr, http.MethodGet, url, "")
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, int64(2), srv.calls.Load())
	})
	for _, method := range []string{http.MethodPost, http.MethodPatch} {
		t.Run(method+" is not retried", func(t *testing.T) {
			tr, srv, clock, url := newTestTransport(t, status(http.StatusBadGateway))
			resp, err := do(t, tr, method, url, `{}`)
			require.NoError(t, err)
			assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
			assert.Equal(t, int64(1), srv.calls.Load())
			assert.Empty(t, clock.Sleeps())
		})
	}
}

func TestTransportRetriesTimeoutsOfIdempotentRequests(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	hang := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	tr, srv, clock, url := newTestTransport(t, hang, status(http.StatusOK))
	tr.AttemptTimeout = 50 * time.Millisecond
	resp, err := do(t, tr, http.MethodGet, url, "")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, int64(2), srv.calls.Load())
	assert.Len(t, clock.Sleeps(), 1)
}

func TestTransportHintlessThrottlesBackOffExponentially(t *testing.T) {
	tr, srv, clock, url := newTestTransport(t,
		status(http.StatusTooManyRequests), status(http.StatusTooManyRequests),
		status(http.StatusTooManyRequests), status(http.StatusOK),
	)
	resp, err := do(t, tr, http.MethodGet, url, "")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, int64(4), srv.calls.Load())
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, clock.Sleeps())
}

func TestRetryAfterParsesSecondsAndDates(t *testing.T) {
	now := time.Unix(1_700_000_000, 0).UTC()
	for _, tc := range []struct {
		value string
		want  time.Duration
		ok    bool
	}{
		{"12", 12 * time.Second, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{"-3", 0, false},
		{"soon", 0, false},
		{"", 0, false},
		{"999999999", time.Hour, true},
	} {
		h := http.Header{}
		if tc.value != "" {
			h.Set("Retry-After", tc.value)
		}
		got, ok := RetryAfter(h, now)
		assert.Equal(t, tc.ok, ok, tc.value)
		assert.Equal(t, tc.want, got, tc.value)
	}
}

func TestRegistrySharesOneLimiterPerKey(t *testing.T) {
	r := NewRegistry()
	a := r.Get("team-a/github", Limits{QPS: 2, Burst: 4})
	assert.Same(t, a, r.Get("team-a/github", Limits{QPS: 2, Burst: 4}))
	b := r.Get("team-b/github", Limits{QPS: 2, Burst: 4})
	assert.NotSame(t, a, b)

	r.Get("team-a/github", Limits{QPS: 5, Burst: 10})
	assert.Equal(t, Limits{QPS: 5, Burst: 10}, a.Limits(), "changed limits apply to the shared limiter")

	seen := map[string]bool{}
	r.Each(func(key string, _ *Limiter) { seen[key] = true })
	assert.Equal(t, map[string]bool{"team-a/github": true, "team-b/github": true}, seen)

	r.Forget("team-a/github")
	assert.NotSame(t, a, r.Get("team-a/github", Limits{QPS: 5, Burst: 10}))
}

func TestLimitsValidate(t *testing.T) {
	require.NoError(t, Limits{QPS: 1.5, Burst: 3}.Validate())
	require.Error(t, Limits{QPS: -1}.Validate())
	require.Error(t, Limits{QPS: 1, Burst: -1}.Validate())
}

func TestPausedErrorIsRecognisedThroughWrapping(t *testing.T) {
	err := errors.Join(errors.New("context"), &PausedError{RetryAfter: 3 * time.Second, Reason: "test"})
	d, ok := IsPaused(err)
	assert.True(t, ok)
	assert.Equal(t, 3*time.Second, d)
	_, ok = IsPaused(errors.New("other"))
	assert.False(t, ok)
}
