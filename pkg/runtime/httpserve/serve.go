// Package httpserve serves an HTTP handler on a listener for as long as a context lives: the one
// server loop of every receiver and page Sluice serves besides metrics and probes.
package httpserve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// shutdownGrace is how long requests in flight may take once the context ends.
const shutdownGrace = 5 * time.Second

// Serve serves handler on ln until ctx ends, then shuts the server down gracefully. Requests see
// ctx as their base context, so a long-lived response (server-sent events) ends with it.
func Serve(ctx context.Context, ln net.Listener, handler http.Handler) error {
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
