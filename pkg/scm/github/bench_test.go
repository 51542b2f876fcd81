package github

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gh "github.com/google/go-github/v75/github"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
	"github.com/sluicehq/sluice/pkg/scm/scmtest"
)

// quota refuses, with 429 and Retry-After, requests beyond perWindow in a fixed window, the way
// GitHub's secondary rate limit does.
type quota struct {
	perWindow int
	window    time.Duration

	mu       sync.Mutex
	start    time.Time
	inWindow int

	requests atomic.Int64
	refused  atomic.Int64
}

func (q *quota) allow() bool {
	q.requests.Add(1)
	q.mu.Lock()
	defer q.mu.Unlock()
	if now := time.Now(); now.Sub(q.start) >= q.window {
		q.start, q.inWindow = now, 0
	}
	q.inWindow++
	if q.inWindow > q.perWindow {
		q.refused.Add(1)
		return false
	}
	return true
}

func (q *quota) handler(w http.ResponseWriter, _ *http.Request) {
	if !q.allow() {
		w.Header().Set("Retry-After", "1")
		ghError(w, http.StatusTooManyRequests, "You have exceeded a secondary rate limit")
		return
	}
	scmtest.WriteJSON(w, http.StatusCreated, map[string]any{"id": 1, "state": "success", "context": "bench"})
}

// BenchmarkSetCommitStatusBurst sends a burst of concurrent SetCommitStatus calls per op to a
// server that allows 20 requests per 100ms. "with-limiter" goes through Sluice's provider and its
// shared token bucket (100/s, burst 5: at most 15 per 100ms); "without-limiter" is the baseline, the
// same REST call through a plain go-github client. Compare 429s/op and failed/op.
func BenchmarkSetCommitStatusBurst(b *testing.B) {
	const burstSize = 50

	run := func(b *testing.B, client func(srv *scmtest.Server) func(context.Context) error) {
		srv := scmtest.NewTLSServer(b)
		q := &quota{perWindow: 20, window: 100 * time.Millisecond}
		srv.Mux.HandleFunc("POST "+api+"/statuses/{sha}", q.handler)
		send := client(srv)
		var failed atomic.Int64
		b.ResetTimer()
		for range b.N {
			var wg sync.WaitGroup
			for range burstSize {
				wg.Go(func() {
					if err := send(context.Background()); err != nil {
						failed.Add(1)
					}
				})
			}
			wg.Wait()
		}
		b.StopTimer()
		b.ReportMetric(float64(q.refused.Load())/float64(b.N), "429s/op")
		b.ReportMetric(float64(q.requests.Load())/float64(b.N), "requests/op")
		b.ReportMetric(float64(failed.Load())/float64(b.N), "failed/op")
	}

	b.Run("with-limiter", func(b *testing.B) {
		run(b, func(srv *scmtest.Server) func(context.Context) error {
			p, err := NewProvider(scm.Config{
				Key: "bench/with-limiter", BaseURL: srv.URL, CABundle: srv.CAPEM,
				Credentials: scm.Credentials{Token: token},
				RateLimit:   ratelimit.Limits{QPS: 100, Burst: 5},
				Limiters:    ratelimit.NewRegistry(),
			})
			if err != nil {
				b.Fatal(err)
			}
			status := scm.CommitStatus{SHA: sha, Name: "bench", State: scm.StatusSuccess}
			return func(c context.Context) error {
				_, err := p.SetCommitStatus(c, repo, status)
				return err
			}
		})
	})
	b.Run("without-limiter", func(b *testing.B) {
		run(b, func(srv *scmtest.Server) func(context.Context) error {
			client, err := gh.NewClient(srv.Client()).WithAuthToken(token).WithEnterpriseURLs(srv.URL, srv.URL)
			if err != nil {
				b.Fatal(err)
			}
			return func(c context.Context) error {
				_, _, err := client.Repositories.CreateStatus(c, repo.Owner, repo.Name, sha,
					&gh.RepoStatus{State: gh.Ptr("success"), Context: gh.Ptr("bench")})
				return err
			}
		})
	})
}
