package ratelimit

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quotaServer accepts at most perWindow requests in each fixed window and answers the rest with
// 429 and Retry-After, the way an SCM enforces its quota. It counts what it refused.
type quotaServer struct {
	perWindow int
	window    time.Duration

	mu          sync.Mutex
	windowStart time.Time
	inWindow    int

	accepted atomic.Int64
	refused  atomic.Int64
}

func (q *quotaServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	q.mu.Lock()
	now := time.Now()
	if now.Sub(q.windowStart) >= q.window {
		q.windowStart = now.Truncate(q.window)
		q.inWindow = 0
	}
	q.inWindow++
	over := q.inWindow > q.perWindow
	q.mu.Unlock()
	if over {
		q.refused.Add(1)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	q.accepted.Add(1)
	w.WriteHeader(http.StatusCreated)
}

// burst sends n requests at once through rt and returns how many ended in a 2xx.
func burst(t testing.TB, rt http.RoundTripper, url string, n int) int64 {
	var ok atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, nil)
			if err != nil {
				t.Error(err)
				return
			}
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode < 300 {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	return ok.Load()
}

// A burst of work must never turn into a storm of 429s. The server allows 30 requests per 200ms
// window; the client bucket allows at most burst+qps*window = 5+50*0.2 = 15 in any 200ms, so it
// stays well inside the quota however the windows align. Without the bucket, the same burst is
// refused in bulk: that half of the test shows the check can fail.
func TestBurstDoesNotBecomeA429Storm(t *testing.T) {
	const requests = 100

	limited := &quotaServer{perWindow: 30, window: 200 * time.Millisecond}
	srv := httptest.NewServer(limited)
	defer srv.Close()
	tr := NewTransport(srv.Client().Transport, NewLimiter(Limits{QPS: 50, Burst: 5}))
	succeeded := burst(t, tr, srv.URL, requests)

	assert.Equal(t, int64(0), limited.refused.Load(), "429s received with the client-side limiter")
	assert.Equal(t, int64(requests), succeeded)
	assert.Equal(t, int64(requests), limited.accepted.Load())

	unlimited := &quotaServer{perWindow: 30, window: 200 * time.Millisecond}
	srv2 := httptest.NewServer(unlimited)
	defer srv2.Close()
	burst(t, srv2.Client().Transport, srv2.URL, requests)
	require.Positive(t, unlimited.refused.Load(), "without the limiter the same burst should be refused in part")
	t.Logf("429s: %d with the client-side limiter, %d without", limited.refused.Load(), unlimited.refused.Load())
}
