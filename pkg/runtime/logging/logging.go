// Package logging builds the process logger and routes client-go's klog output through it, so
// every line a controller prints has one format.
package logging

import (
	"io"
	"log/slog"

	"k8s.io/klog/v2"
)

// New returns a JSON or text logger at the given verbosity (0 = info; each step adds detail) and
// makes it the default for slog and klog.
func New(w io.Writer, format string, verbosity int) *slog.Logger {
	opts := &slog.HandlerOptions{Level: slog.Level(-verbosity)}
	var h slog.Handler
	if format == "text" {
		h = slog.NewTextHandler(w, opts)
	} else {
		h = slog.NewJSONHandler(w, opts)
	}
	log := slog.New(h)
	slog.SetDefault(log)
	klog.SetSlogLogger(log)
	return log
}
