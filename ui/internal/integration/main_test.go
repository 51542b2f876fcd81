// Package integration drives the UI in a real browser (Debian's Chromium, through chromedp)
// against the real local control plane: pages update live as objects change, and actions taken
// from the page change the cluster as the person who took them.
package integration

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/pkg/runtime/httpserve"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
	"github.com/sluicehq/sluice/ui/internal/setup"
	"github.com/sluicehq/sluice/ui/internal/web"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	flag.Parse()
	var opts testenv.Options
	if !testing.Short() {
		if err := ensureChromium(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		paths, err := flux.CRDPaths()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		opts.CRDPaths = paths
	}
	testenv.Main(m, opts, &env)
}

// chromium is the browser the tests drive: Debian's, from its package.
var chromium = "/usr/bin/chromium"

// ensureChromium installs Debian's Chromium when it is missing. Installing needs root, which CI
// has; anyone else is told the one command to run.
func ensureChromium() error {
	if p, err := exec.LookPath("chromium"); err == nil {
		chromium = p
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("the browser tests need Debian's Chromium: run `sudo apt-get install -y chromium` once")
	}
	fmt.Fprintln(os.Stderr, "installing Debian's chromium for the browser tests")
	for _, args := range [][]string{{"update"}, {"install", "-y", "--no-install-recommends", "chromium"}} {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %v: %w\n%s", args, err, testenv.Tail(out, 20))
		}
	}
	p, err := exec.LookPath("chromium")
	chromium = p
	return err
}

// startUI runs the UI in-process with identity mode id, as the admin of the control plane (its
// own ServiceAccount, in a cluster), and returns its address. As Setup does, it serves on a
// loopback TCP address (the URL returned) and, when c.ProxySocket is set, on that socket too.
func startUI(t *testing.T, cfg *rest.Config, c setup.Config) string {
	t.Helper()
	testenv.SkipIfShort(t)
	opts := options.Defaults("sluice-ui")
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "127.0.0.1:0", "127.0.0.1:0"
	out := io.Discard
	if os.Getenv("UI_TEST_LOG") != "" {
		out = os.Stderr
	}
	m, err := manager.New("sluice-ui", opts, cfg, slog.New(slog.NewTextHandler(out, nil)))
	require.NoError(t, err)
	if c.Identity == setup.IdentityKubeconfig {
		c.LaunchToken = web.NewLaunchToken()
	}
	h, err := setup.NewHandler(m, c)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- httpserve.Serve(ctx, ln, h) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	if c.ProxySocket != "" {
		sock, err := setup.ListenProxySocket(c.ProxySocket)
		require.NoError(t, err)
		sockDone := make(chan error, 1)
		go func() { sockDone <- httpserve.Serve(ctx, sock, web.ViaProxySocket(h)) }()
		t.Cleanup(func() { cancel(); require.NoError(t, <-sockDone) })
	}
	testenv.RunManager(t, m)
	url := "http://" + ln.Addr().String()
	if c.Identity == setup.IdentityKubeconfig {
		launchTokens.Store(url, c.LaunchToken)
	}
	managers.Store(url, m)
	return url
}

// managers are the managers of the UIs the tests started, by URL: their metrics address.
var managers sync.Map

// launchTokens are the launch tokens of the local-mode UIs the tests started, by URL.
var launchTokens sync.Map

// signIn opens the URL that carries the launch token of the local-mode UI at url, as the URL
// sluice-ui prints at start: the browser keeps the token's cookie.
func signIn(b context.Context, t *testing.T, url string) {
	t.Helper()
	token, ok := launchTokens.Load(url)
	require.True(t, ok, "no local-mode UI was started at %s", url)
	within(b, t, chromedp.Navigate(setup.LaunchURL(strings.TrimPrefix(url, "http://"), token.(string))),
		chromedp.WaitVisible(css(`#live.on`)))
}

// browser starts a headless Chromium with a fresh profile for the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	require.NoError(t, chromedp.Do(ctx), "start chromium")
	return ctx
}

// within bounds browser steps generously: each step itself waits for what it needs.
func within(ctx context.Context, t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	step, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(step, steps...))
}

// read runs one browser action that returns a value, within the same bound.
func read[T any](ctx context.Context, t *testing.T, a chromedp.Action[T]) T {
	t.Helper()
	step, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(step, a)
	require.NoError(t, err)
	return v
}

// css is a CSS selector.
func css(s string) chromedp.CSS { return chromedp.CSS(s) }

// follow opens the link sel finds by its address, as a click on it would: a live page may swap
// the link out for a fresh copy between finding it and clicking it, and the click then finds no
// node.
func follow(sel string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, target *chromedp.Target) (chromedp.Void, error) {
		if _, err := chromedp.WaitVisible(css(sel))(ctx, target); err != nil {
			return chromedp.Void{}, err
		}
		href, err := chromedp.Evaluate[string](`document.querySelector(`+strconv.Quote(sel)+`).href`)(ctx, target)
		if err != nil {
			return chromedp.Void{}, fmt.Errorf("the address of %s: %w", sel, err)
		}
		return chromedp.Navigate(href)(ctx, target)
	}
}

// screenshot saves the page as ui-NAME.png into $SLUICE_UI_SCREENSHOTS, which make screenshots
// sets to docs/images, else into .cache/ui-screenshots of the repository.
func screenshot(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	dir := os.Getenv("SLUICE_UI_SCREENSHOTS")
	if dir == "" {
		root, err := testenv.RepoRoot()
		require.NoError(t, err)
		dir = filepath.Join(root, ".cache", "ui-screenshots")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	png := read(ctx, t, chromedp.FullScreenshot(100))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ui-"+name+".png"), png, 0o644))
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns, err := env.Kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ui-"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return ns.Name
}

func newJar(t *testing.T) http.CookieJar {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return jar
}
