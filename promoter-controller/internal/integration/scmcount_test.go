package integration

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// scmCalls counts what the promoter asked of one repository on an SCM: its API calls by kind, and
// its git calls (ref advertisements for fetches, downloads, pushes).
type scmCalls struct {
	Find, Create, Get, Edit, Merge, Statuses, OtherAPI int64
	Adverts, Uploads, Pushes                           int64
}

// API is every API call.
func (c scmCalls) API() int64 {
	return c.Find + c.Create + c.Get + c.Edit + c.Merge + c.Statuses + c.OtherAPI
}

func (c scmCalls) plus(d scmCalls) scmCalls {
	return scmCalls{c.Find + d.Find, c.Create + d.Create, c.Get + d.Get, c.Edit + d.Edit, c.Merge + d.Merge,
		c.Statuses + d.Statuses, c.OtherAPI + d.OtherAPI, c.Adverts + d.Adverts, c.Uploads + d.Uploads, c.Pushes + d.Pushes}
}

func (c scmCalls) minus(d scmCalls) scmCalls {
	return scmCalls{c.Find - d.Find, c.Create - d.Create, c.Get - d.Get, c.Edit - d.Edit, c.Merge - d.Merge,
		c.Statuses - d.Statuses, c.OtherAPI - d.OtherAPI, c.Adverts - d.Adverts, c.Uploads - d.Uploads, c.Pushes - d.Pushes}
}

// countingProxy is a reverse proxy in front of an SCM (Gitea's API and git over HTTP) that counts
// each request per repository, so the calls a promoter makes are counted where the SCM sees them.
type countingProxy struct {
	URL string

	mu    sync.Mutex
	calls map[string]*scmCalls
}

func newCountingProxy(tb testing.TB, target string) *countingProxy {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	p := &countingProxy{calls: map[string]*scmCalls{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.count(r)
		rp.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

var (
	// apiPath is /api/v1/repos/{owner}/{repo}/{rest}.
	apiPath = regexp.MustCompile(`^/api/v1/repos/[^/]+/([^/]+)(/.*)?$`)
	// gitPath is /{owner}/{repo}.git/{rest}.
	gitPath   = regexp.MustCompile(`^/[^/]+/([^/]+)\.git/(.*)$`)
	pullPath  = regexp.MustCompile(`^/pulls/\d+$`)
	mergePath = regexp.MustCompile(`^/pulls/\d+/merge$`)
)

func (p *countingProxy) count(r *http.Request) {
	var repo string
	var add func(c *scmCalls)
	if m := apiPath.FindStringSubmatch(r.URL.Path); m != nil {
		repo, add = m[1], apiCall(r.Method, m[2])
	} else if m := gitPath.FindStringSubmatch(r.URL.Path); m != nil {
		repo, add = m[1], gitCall(m[2], r.URL.Query().Get("service"))
	}
	if add == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.calls[repo]
	if c == nil {
		c = &scmCalls{}
		p.calls[repo] = c
	}
	add(c)
}

// apiCall is the counter of one API request on a repository; rest is the path after the repository.
func apiCall(method, rest string) func(*scmCalls) {
	switch {
	case rest == "/pulls" && method == http.MethodGet:
		return func(c *scmCalls) { c.Find++ }
	case rest == "/pulls" && method == http.MethodPost:
		return func(c *scmCalls) { c.Create++ }
	case pullPath.MatchString(rest) && method == http.MethodGet:
		return func(c *scmCalls) { c.Get++ }
	case pullPath.MatchString(rest) && method == http.MethodPatch:
		return func(c *scmCalls) { c.Edit++ }
	case mergePath.MatchString(rest):
		return func(c *scmCalls) { c.Merge++ }
	case strings.Contains(rest, "/status"):
		return func(c *scmCalls) { c.Statuses++ }
	}
	return func(c *scmCalls) { c.OtherAPI++ }
}

func gitCall(action, service string) func(*scmCalls) {
	switch {
	case action == "info/refs" && service == "git-upload-pack":
		return func(c *scmCalls) { c.Adverts++ }
	case action == "git-upload-pack":
		return func(c *scmCalls) { c.Uploads++ }
	case action == "git-receive-pack":
		return func(c *scmCalls) { c.Pushes++ }
	}
	return nil
}

// snapshot copies the counts of every repository.
func (p *countingProxy) snapshot() map[string]scmCalls {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]scmCalls, len(p.calls))
	for k, v := range p.calls {
		out[k] = *v
	}
	return out
}

// since sums, over repos, the calls made since before, and returns the most API calls any one
// repository got.
func (p *countingProxy) since(before map[string]scmCalls, repos []string) (sum scmCalls, mostAPI int64) {
	now := p.snapshot()
	for _, r := range repos {
		d := now[r].minus(before[r])
		sum = sum.plus(d)
		mostAPI = max(mostAPI, d.API())
	}
	return sum, mostAPI
}
