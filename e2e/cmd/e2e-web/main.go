// Command e2e-web is the small HTTP app the end-to-end suite deploys through Flux: it serves the
// version it was started with, so a test sees which release a pod runs, and a "bad" version (one
// ending in -bad) fails its readiness, as a broken release would.
//
//	e2e-web --version 1.1.0            # or WEB_VERSION=1.1.0
//	GET /         -> "e2e-web 1.1.0"
//	GET /healthz  -> 200 while the process serves (liveness)
//	GET /readyz   -> 200, or 503 for a bad version (readiness)
//
// It is built into an image by hack/tools/images (--set e2e), like Sluice's controllers.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// buildVersion and buildRevision are stamped by hack/tools/images: the build, not the release
// the app plays.
var buildVersion, buildRevision = "dev", ""

// badSuffix marks a version whose readiness fails.
const badSuffix = "-bad"

func main() {
	version := flag.String("version", os.Getenv("WEB_VERSION"), "Release this instance serves (default $WEB_VERSION). A version ending in "+badSuffix+" fails readiness.")
	listen := flag.String("listen", ":8080", "Address to serve on.")
	flag.Parse()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if *version == "" {
		log.Error("no version: pass --version or set WEB_VERSION")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Addr: *listen, Handler: handler(*version), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Info("serving", "version", *version, "ready", ready(*version), "listen", *listen, "build", buildVersion, "revision", buildRevision)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("serve", "err", err)
		os.Exit(1)
	}
}

// ready reports whether a version passes readiness.
func ready(version string) bool { return !strings.HasSuffix(version, badSuffix) }

func handler(version string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "e2e-web %s\n", version)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready(version) {
			http.Error(w, "version "+version+" is a bad release", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}
