// Package web serves the UI: server-rendered pages from html/template, a stream of changes as
// server-sent events, and the actions, each confirmed first and performed with the requesting
// person's Kubernetes identity. Assets are embedded: nothing is fetched from elsewhere, so the UI
// works on an air-gapped cluster.
package web

import (
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/pkg/access"
	"github.com/sluicehq/sluice/ui/internal/store"
)

//go:embed assets templates
var embedded embed.FS

// Server is the UI's HTTP handler.
type Server struct {
	// Store is the store as the request's person sees it: Handler serves each page with a copy of
	// the Server whose Store is scoped to that person (reads.go). The Server New returns reads
	// nothing, so a page not routed through Handler's page shows nothing rather than everything.
	Store *store.Store
	// Reads answers what a person may read (reads.go); nil, everyone reads everything the
	// store holds, as in local mode, where the informers read with the person's own kubeconfig.
	Reads *access.Reviewer
	// Identify tells who sent a request; an anonymous request may read but never act.
	Identify Identifier
	// AnonymousRead lets requests that name nobody read the pages (anonymous.go); off, they are
	// refused.
	AnonymousRead bool
	// Act performs actions; nil makes the UI read-only.
	Act  *Actor
	Log  *slog.Logger
	Now  func() time.Time
	csrf csrfGuard
	// flashes are the banners of done actions, by the key in ?done= (flash.go).
	flashes *flashes

	// all is the whole store, which Handler scopes for each request.
	all *store.Store
	// Metrics are the UI's own; New registers them on a registry of their own, which setup
	// replaces with the process's (served on the metrics address).
	Metrics *Metrics
	pages   map[string]*template.Template
}

// New parses the templates.
func New(st *store.Store, identify Identifier, act *Actor, log *slog.Logger) (*Server, error) {
	s := &Server{all: st, Store: st.For(store.Nothing), Identify: identify, Act: act, Log: log, Now: time.Now, flashes: &flashes{},
		Metrics: NewMetrics(prometheus.NewRegistry())}
	var err error
	if s.pages, err = parsePages(); err != nil {
		return nil, err
	}
	return s, nil
}

// Handler routes every page, the event stream, the assets and the actions.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	assets, _ := fs.Sub(embedded, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", cacheForever(http.FileServerFS(assets))))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/pipelines", http.StatusFound)
	})
	// page routes a handler that reads the store: it is served by a Server scoped to the person.
	page := func(pattern string, h func(*Server, http.ResponseWriter, *http.Request)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { h(s.forRequest(r), w, r) })
	}
	page("GET /pipelines", (*Server).pipelines)
	page("GET /pipelines/{namespace}/{name}", (*Server).pipeline)
	page("GET /pipelines/{namespace}/{name}/history", (*Server).history)
	page("GET /pipelines/{namespace}/{name}/diff", (*Server).pipelineDiff)
	page("GET /gates", (*Server).gates)
	page("GET /gates/{namespace}/{name}", (*Server).gates)
	page("GET /health", (*Server).health)
	page("GET /rollbacks", (*Server).rollbacks)
	page("GET /rollbacks/{namespace}/{name}/diff", (*Server).releaseDiff)
	page("GET /search", (*Server).search)
	page("GET /frozen", (*Server).frozen)
	page("GET /frozen/count", (*Server).frozenCount)
	page("GET /activity", (*Server).activity)
	page("GET /events", (*Server).events)
	page("GET /act/{action}/{namespace}/{name}", (*Server).actionForm)
	page("POST /act/{action}/{namespace}/{name}", (*Server).action)
	return s.measure(mux, s.guard(mux))
}

// guard sets the headers every response carries: no framing (clickjacking on the action
// buttons), no resources from other origins, no referrer leaking object names.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if !s.Identify.AllowsHost(r.Host) {
			http.Error(w, "this UI answers only on the host it was started for", http.StatusMisdirectedRequest)
			return
		}
		if a, ok := s.Identify.(admitter); ok && !a.admit(w, r) {
			return
		}
		if s.refuseAnonymous(w, r) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

func cacheForever(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		next.ServeHTTP(w, r)
	})
}
