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

	"github.com/sluicehq/sluice/ui/internal/store"
)

//go:embed assets templates
var embedded embed.FS

// Server is the UI's HTTP handler.
type Server struct {
	Store *store.Store
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
	flashes flashes

	pages map[string]*template.Template
}

// New parses the templates.
func New(st *store.Store, identify Identifier, act *Actor, log *slog.Logger) (*Server, error) {
	s := &Server{Store: st, Identify: identify, Act: act, Log: log, Now: time.Now}
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
	mux.HandleFunc("GET /pipelines", s.pipelines)
	mux.HandleFunc("GET /pipelines/{namespace}/{name}", s.pipeline)
	mux.HandleFunc("GET /pipelines/{namespace}/{name}/history", s.history)
	mux.HandleFunc("GET /gates", s.gates)
	mux.HandleFunc("GET /gates/{namespace}/{name}", s.gates)
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /rollbacks", s.rollbacks)
	mux.HandleFunc("GET /search", s.search)
	mux.HandleFunc("GET /frozen", s.frozen)
	mux.HandleFunc("GET /frozen/count", s.frozenCount)
	mux.HandleFunc("GET /activity", s.activity)
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("GET /act/{action}/{namespace}/{name}", s.actionForm)
	mux.HandleFunc("POST /act/{action}/{namespace}/{name}", s.action)
	return s.guard(mux)
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
