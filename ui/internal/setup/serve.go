package setup

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/sluicehq/sluice/pkg/runtime/httpserve"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
)

// Serve serves handler on addr until ctx ends. The event streams last as long as a page is
// open, so there is no write timeout; headers must come within 10 s.
// In local mode (token set) it prints the URL that carries the launch token to stdout, never to
// the log.
func Serve(ctx context.Context, addr string, handler http.Handler, m *manager.Manager, token string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", addr, err)
	}
	m.Log.Info("serving the UI", "url", "http://"+ln.Addr().String())
	if token != "" {
		fmt.Printf("Sluice UI, acting as you with your kubeconfig; open:\n  %s\n", LaunchURL(ln.Addr().String(), token))
	}
	return httpserve.Serve(ctx, ln, handler)
}

// ListenProxySocket listens on the Unix socket at path for a sidecar proxy, replacing a socket
// left by an earlier run (never any other file), readable and writable by its owner and group
// only: the pod's fsGroup, which an emptyDir gives every container of the pod.
func ListenProxySocket(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("--proxy-socket %s exists and is not a socket; refusing to replace it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("--proxy-socket %s: removing the stale socket: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("--proxy-socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o660); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("--proxy-socket %s: %w", path, err)
	}
	return ln, nil
}
