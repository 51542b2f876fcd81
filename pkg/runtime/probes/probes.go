// Package probes serves /metrics on one address and /livez and /readyz on another, the way
// kubelet probes and Prometheus scrapes expect, and Go's /debug/pprof on a third when asked.
package probes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"
)

// Check returns nil when healthy.
type Check func(*http.Request) error

// Server holds readiness state and liveness checks.
type Server struct {
	addrs    Addresses
	gatherer prometheus.Gatherer
	log      *slog.Logger

	ready atomic.Bool

	mu          sync.Mutex
	livez       map[string]Check
	metricsLn   net.Listener
	probeLn     net.Listener
	profilerLn  net.Listener
	listenReady chan struct{}
}

// Addresses are where each server listens. "0" or "" disables that server.
type Addresses struct {
	Metrics  string
	Probes   string
	Profiler string
}

// New returns a Server.
func New(addrs Addresses, gatherer prometheus.Gatherer, log *slog.Logger) *Server {
	return &Server{
		addrs:       addrs,
		gatherer:    gatherer,
		log:         log,
		livez:       map[string]Check{},
		listenReady: make(chan struct{}),
	}
}

// SetReady marks the process ready: /readyz answers 200 from now on.
func (s *Server) SetReady() { s.ready.Store(true) }

// Ready reports whether SetReady was called: every informer cache has synced.
func (s *Server) Ready() bool { return s.ready.Load() }

// AddLivezCheck adds a named liveness check, such as the leader-election watchdog.
func (s *Server) AddLivezCheck(name string, check Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.livez[name] = check
}

// Addrs returns the bound addresses once Run is listening, empty for a disabled server; useful
// when binding port 0 in tests.
func (s *Server) Addrs(ctx context.Context) (Addresses, error) {
	select {
	case <-s.listenReady:
	case <-ctx.Done():
		return Addresses{}, ctx.Err()
	}
	return Addresses{Metrics: boundAddr(s.metricsLn), Probes: boundAddr(s.probeLn), Profiler: boundAddr(s.profilerLn)}, nil
}

// Run listens until ctx is done, then shuts the servers down gracefully.
func (s *Server) Run(ctx context.Context) error {
	var servers []*http.Server
	var listeners []net.Listener
	listen := func(addr string, handler http.Handler) (net.Listener, error) {
		if addr == "" || addr == "0" {
			return nil, nil
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("listen on %s: %w", addr, err)
		}
		servers = append(servers, &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second})
		listeners = append(listeners, ln)
		return ln, nil
	}
	metricsMux := http.NewServeMux()
	metricsMux.Handle("/metrics", promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{}))
	probeMux := http.NewServeMux()
	probeMux.HandleFunc("/livez", s.serveLivez)
	probeMux.HandleFunc("/healthz", s.serveLivez)
	probeMux.HandleFunc("/readyz", s.serveReadyz)

	var err error
	if s.metricsLn, err = listen(s.addrs.Metrics, metricsMux); err != nil {
		return err
	}
	if s.probeLn, err = listen(s.addrs.Probes, probeMux); err != nil {
		return err
	}
	if s.profilerLn, err = listen(s.addrs.Profiler, profilerMux()); err != nil {
		return err
	}
	close(s.listenReady)
	// The bound addresses, so a port chosen with :0 can be found, and a person sees where to look.
	if s.log != nil {
		s.log.Info("listening", "metrics", listenerAddr(s.metricsLn), "probes", listenerAddr(s.probeLn), "profiler", listenerAddr(s.profilerLn))
	}

	g, gctx := errgroup.WithContext(ctx)
	for i := range servers {
		srv, ln := servers[i], listeners[i]
		g.Go(func() error {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
		g.Go(func() error {
			<-gctx.Done()
			shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return srv.Shutdown(shutdownCtx)
		})
	}
	return g.Wait()
}

// profilerMux serves net/http/pprof's handlers on a mux of their own: importing the package
// registers them on http.DefaultServeMux, which no Sluice server uses.
func profilerMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

func (s *Server) serveReadyz(w http.ResponseWriter, _ *http.Request) {
	if !s.ready.Load() {
		http.Error(w, "informer caches have not synced yet", http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok"))
}

func (s *Server) serveLivez(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	checks := make(map[string]Check, len(s.livez))
	for k, v := range s.livez {
		checks[k] = v
	}
	s.mu.Unlock()
	for name, check := range checks {
		if err := check(r); err != nil {
			http.Error(w, fmt.Sprintf("%s failed: %v", name, err), http.StatusServiceUnavailable)
			return
		}
	}
	_, _ = w.Write([]byte("ok"))
}

// boundAddr is ln's address, or "" for a disabled listener.
func boundAddr(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}

// listenerAddr is ln's address, or "off" for a disabled listener, for the log.
func listenerAddr(ln net.Listener) string {
	if addr := boundAddr(ln); addr != "" {
		return addr
	}
	return "off"
}
