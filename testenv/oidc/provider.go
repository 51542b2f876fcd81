// Package oidc runs a real OpenID provider on loopback for the UI's login tests: the one
// hack/tools/oidc-provider builds (zitadel/oidc's provider, its own login page, an in-memory
// store), with the clients and users a test names. Each user's ID token carries their name in
// preferred_username and sub, and their groups in "groups".
package oidc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/testenv"
)

// Client is a confidential web client of the provider.
type Client struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
	// RedirectURIs are exact, or doublestar globs such as http://127.0.0.1:*/oidc/callback.
	RedirectURIs []string `json:"redirectURIs"`
}

// User signs in on the provider's login page with Username and Password.
type User struct {
	Username string   `json:"username"`
	Password string   `json:"password"`
	Email    string   `json:"email"`
	Groups   []string `json:"groups"`
}

// Options name what the provider knows, and where it serves.
type Options struct {
	Clients []Client `json:"clients"`
	Users   []User   `json:"users"`
	// Listen is the address served on; empty is a free loopback port. The e2e suite's provider
	// listens on the node's address, which its pods reach too.
	Listen string `json:"-"`
	// TLSCertFile and TLSKeyFile, PEM files, make it serve HTTPS with an https:// issuer; empty
	// serves HTTP, which the UI accepts only on loopback.
	TLSCertFile string `json:"-"`
	TLSKeyFile  string `json:"-"`
}

// Provider is a running OpenID provider.
type Provider struct {
	// Issuer is its issuer URL, such as http://127.0.0.1:34567, without a trailing slash.
	Issuer string

	cmd    *exec.Cmd
	output *testenv.SyncBuffer
	exited chan struct{}
	dir    string
}

// startTimeout bounds the wait for the issuer line; a start takes well under a second, a first
// build about a minute.
const startTimeout = 5 * time.Minute

// StartForTest starts a provider for the test and stops it when the test ends, logging its
// output if the test failed.
func StartForTest(t testing.TB, opts Options) *Provider {
	t.Helper()
	p, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("starting the OpenID provider: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("OpenID provider output:\n%s", testenv.Tail(p.output.Bytes(), 40))
		}
		p.Close()
	})
	return p
}

// Start builds the provider if needed (hack/tools/oidc-provider/build.sh) and starts it on
// opts.Listen, by default a free loopback port. Close stops it.
func Start(ctx context.Context, opts Options) (*Provider, error) {
	bin, err := binary(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-oidc-")
	if err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(opts)
	config := filepath.Join(dir, "config.json")
	if err := os.WriteFile(config, raw, 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	p := &Provider{output: &testenv.SyncBuffer{}, exited: make(chan struct{}), dir: dir}
	listen := opts.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	p.cmd = exec.Command(bin, "--config", config, "--listen", listen, "--tls-cert", opts.TLSCertFile, "--tls-key", opts.TLSKeyFile)
	p.cmd.Stderr = p.output
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	if p.Issuer, err = readIssuer(ctx, stdout, p.exited); err != nil {
		p.Close()
		return nil, fmt.Errorf("%w\n%s", err, testenv.Tail(p.output.Bytes(), 20))
	}
	return p, nil
}

// readIssuer waits for the provider's "issuer URL" line, then drains its stdout.
func readIssuer(ctx context.Context, stdout io.Reader, exited <-chan struct{}) (string, error) {
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case l := <-line:
		issuer, ok := strings.CutPrefix(l, "issuer ")
		if !ok {
			return "", fmt.Errorf("the provider said %q, not its issuer", l)
		}
		return issuer, nil
	case <-exited:
		return "", errors.New("the provider exited before it served")
	case <-time.After(startTimeout):
		return "", errors.New("the provider did not serve within 5m")
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Close stops the provider and removes its folder.
func (p *Provider) Close() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
	_ = os.RemoveAll(p.dir)
}

// DiscoveryURL is where the provider's OpenID configuration is served.
func (p *Provider) DiscoveryURL() string { return p.Issuer + "/.well-known/openid-configuration" }

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// binary runs hack/tools/oidc-provider/build.sh, which builds once per source change (cached, and
// locked so parallel test packages build once), and returns the binary it prints.
func binary(ctx context.Context) (string, error) {
	binOnce.Do(func() {
		root, err := testenv.RepoRoot()
		if err != nil {
			binErr = err
			return
		}
		script := filepath.Join(root, "hack", "tools", "oidc-provider", "build.sh")
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, "bash", script)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			binErr = fmt.Errorf("building the OpenID provider with %s: %w\n%s", script, err, stderr.String())
			return
		}
		binPath = strings.TrimSpace(string(out))
	})
	return binPath, binErr
}
