package scmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// GitHubStatus is one commit status the fake GitHub holds.
type GitHubStatus struct {
	ID          int64  `json:"id"`
	State       string `json:"state"`
	Context     string `json:"context"`
	Description string `json:"description,omitempty"`
	TargetURL   string `json:"target_url,omitempty"`
}

// GitHub is an in-process GitHub Enterprise Server that implements the commit status REST API as
// documented: POST /repos/{owner}/{repo}/statuses/{sha}, GET
// /repos/{owner}/{repo}/commits/{ref}/status and GET /repos/{owner}/{repo}/commits/{ref}/check-runs
// (runs added with AddCheckRun), under /api/v3. It checks the bearer token, answers
// 404 for repositories it was not told about, 422 for an invalid state, and, with a quota,
// reports X-RateLimit-* headers and refuses requests over the quota with 429 and Retry-After.
// Point an ScmProvider of type github at URL, with CAPEM as its CA bundle.
type GitHub struct {
	*Server
	Token string

	mu       sync.Mutex
	repos    map[string]bool
	statuses map[string][]GitHubStatus
	runs     map[string][]GitHubCheckRun
	nextID   int64
	quota    *quota

	posts     atomic.Int64
	throttled atomic.Int64

	// BeforeStatusRead, when set (before any request), runs as a read of a commit's statuses
	// arrives and before it is answered: a test puts a concurrent write in that moment.
	BeforeStatusRead func(sha string)
}

// NewGitHub starts a fake GitHub that accepts token, closed when the test ends.
func NewGitHub(t testing.TB, token string) *GitHub {
	t.Helper()
	g := &GitHub{Server: NewTLSServer(t), Token: token, repos: map[string]bool{}, statuses: map[string][]GitHubStatus{}, runs: map[string][]GitHubCheckRun{}}
	g.Mux.HandleFunc("POST /api/v3/repos/{owner}/{repo}/statuses/{sha}", g.guard(g.createStatus))
	g.Mux.HandleFunc("GET /api/v3/repos/{owner}/{repo}/commits/{ref}/status", g.guard(g.combinedStatus))
	g.Mux.HandleFunc("GET /api/v3/repos/{owner}/{repo}/commits/{ref}/check-runs", g.guard(g.listCheckRuns))
	return g
}

// GitHubCheckRun is one check run the fake GitHub holds, as "List check runs for a Git
// reference" returns it.
type GitHubCheckRun struct {
	ID         int64                `json:"id"`
	HeadSHA    string               `json:"head_sha"`
	Name       string               `json:"name"`
	Status     string               `json:"status"`
	Conclusion string               `json:"conclusion,omitempty"`
	DetailsURL string               `json:"details_url,omitempty"`
	Output     GitHubCheckRunOutput `json:"output"`
}

// GitHubCheckRunOutput is a check run's output.
type GitHubCheckRunOutput struct {
	Title   string `json:"title,omitempty"`
	Summary string `json:"summary,omitempty"`
}

// AddCheckRun records a check run on owner/name at run.HeadSHA, as a CI App would create it, and
// returns its id.
func (g *GitHub) AddCheckRun(owner, name string, run GitHubCheckRun) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.nextID++
	run.ID = g.nextID
	key := owner + "/" + name + "@" + run.HeadSHA
	g.runs[key] = append(g.runs[key], run)
	return run.ID
}

// listCheckRuns answers with the latest run of each name (filter=latest, GitHub's default).
func (g *GitHub) listCheckRuns(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	all := append([]GitHubCheckRun(nil), g.runs[r.PathValue("owner")+"/"+r.PathValue("repo")+"@"+strings.ToLower(r.PathValue("ref"))]...)
	g.mu.Unlock()
	seen := map[string]bool{}
	latest := []GitHubCheckRun{}
	for i := len(all) - 1; i >= 0; i-- {
		if !seen[all[i].Name] {
			seen[all[i].Name] = true
			latest = append(latest, all[i])
		}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"total_count": len(latest), "check_runs": latest})
}

// AddRepo makes owner/name exist; requests for any other repository answer 404.
func (g *GitHub) AddRepo(owner, name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.repos[owner+"/"+name] = true
}

// SetQuota allows limit requests per window, counted over every endpoint, like GitHub's primary
// rate limit; zero removes the quota. Windows start with the first request after the call.
func (g *GitHub) SetQuota(limit int, window time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if limit <= 0 {
		g.quota = nil
		return
	}
	g.quota = &quota{limit: limit, window: window}
}

// Statuses returns every status posted to owner/name at sha, oldest first.
func (g *GitHub) Statuses(owner, name, sha string) []GitHubStatus {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]GitHubStatus(nil), g.statuses[owner+"/"+name+"@"+sha]...)
}

// StatusPosts counts the create-status requests that reached the API, refused ones included.
func (g *GitHub) StatusPosts() int64 { return g.posts.Load() }

// Throttled counts the requests refused with 429 because the quota was spent.
func (g *GitHub) Throttled() int64 { return g.throttled.Load() }

// quota is a fixed window counter.
type quota struct {
	limit  int
	window time.Duration
	start  time.Time
	used   int
}

// take counts one request and returns the headers to send, and whether it is over the quota.
func (q *quota) take(now time.Time) (http.Header, bool) {
	if q.start.IsZero() || now.Sub(q.start) >= q.window {
		q.start, q.used = now, 0
	}
	q.used++
	reset := q.start.Add(q.window)
	h := http.Header{}
	h.Set("X-RateLimit-Limit", strconv.Itoa(q.limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(q.limit-q.used, 0)))
	h.Set("X-RateLimit-Used", strconv.Itoa(min(q.used, q.limit)))
	// GitHub sends the reset as Unix seconds; round up so clients never resume early.
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Add(time.Second-1).Unix(), 10))
	if q.used <= q.limit {
		return h, false
	}
	wait := int64(reset.Sub(now).Seconds()) + 1
	h.Set("Retry-After", strconv.FormatInt(wait, 10))
	return h, true
}

func (g *GitHub) guard(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			g.posts.Add(1)
		}
		g.mu.Lock()
		var over bool
		if g.quota != nil {
			var h http.Header
			h, over = g.quota.take(time.Now())
			for k, v := range h {
				w.Header()[k] = v
			}
		}
		known := g.repos[r.PathValue("owner")+"/"+r.PathValue("repo")]
		g.mu.Unlock()

		switch {
		case over:
			g.throttled.Add(1)
			gitHubError(w, http.StatusTooManyRequests, "API rate limit exceeded")
		case r.Header.Get("Authorization") != "Bearer "+g.Token:
			gitHubError(w, http.StatusUnauthorized, "Bad credentials")
		case !known:
			gitHubError(w, http.StatusNotFound, "Not Found")
		default:
			next(w, r)
		}
	}
}

func (g *GitHub) createStatus(w http.ResponseWriter, r *http.Request) {
	var in GitHubStatus
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		gitHubError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	switch in.State {
	case "pending", "success", "failure", "error":
	default:
		gitHubError(w, http.StatusUnprocessableEntity, fmt.Sprintf("Validation Failed: state %q is not included in the list", in.State))
		return
	}
	if in.Context == "" {
		in.Context = "default"
	}
	g.mu.Lock()
	g.nextID++
	in.ID = g.nextID
	key := r.PathValue("owner") + "/" + r.PathValue("repo") + "@" + strings.ToLower(r.PathValue("sha"))
	g.statuses[key] = append(g.statuses[key], in)
	g.mu.Unlock()
	WriteJSON(w, http.StatusCreated, in)
}

// combinedStatus answers with the latest status of each context, newest first.
func (g *GitHub) combinedStatus(w http.ResponseWriter, r *http.Request) {
	sha := strings.ToLower(r.PathValue("ref"))
	if g.BeforeStatusRead != nil {
		g.BeforeStatusRead(sha)
	}
	all := g.Statuses(r.PathValue("owner"), r.PathValue("repo"), sha)
	seen := map[string]bool{}
	latest := []GitHubStatus{}
	for i := len(all) - 1; i >= 0; i-- {
		if !seen[all[i].Context] {
			seen[all[i].Context] = true
			latest = append(latest, all[i])
		}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"sha": sha, "total_count": len(latest), "statuses": latest})
}

func gitHubError(w http.ResponseWriter, status int, message string) {
	WriteJSON(w, status, map[string]any{"message": message, "documentation_url": "https://docs.github.com/rest"})
}
