package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// startUI runs the web UI (bin/sluice-ui) in local mode as the demo's admin, and returns the
// URL that lets a browser in (it carries the launch token, which the demo chooses), or "" when
// it is not built.
func startUI(binDir, kubeconfig, logDir string, s *Story) (*exec.Cmd, string, error) {
	bin := filepath.Join(binDir, "sluice-ui")
	if _, err := os.Stat(bin); err != nil {
		s.Say("%-24s not built (run `make build`); no UI and no screenshots", "sluice-ui")
		return nil, "", nil
	}
	listen, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	logFile, err := os.Create(filepath.Join(logDir, "sluice-ui.log"))
	if err != nil {
		return nil, "", err
	}
	metrics, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--listen", listen,
		"--metrics-bind-address", metrics, "--health-probe-bind-address", "0", "--log-format", "text")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	token, err := randomToken()
	if err != nil {
		return nil, "", err
	}
	cmd.Env = append(os.Environ(), "SLUICE_UI_TOKEN="+token)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, "", fmt.Errorf("start sluice-ui: %w", err)
	}
	url := "http://" + listen
	s.Metrics["sluice-ui"] = metrics
	s.Say("%-24s pid %-7d %s metrics http://%s/metrics", "sluice-ui", cmd.Process.Pid, url, metrics)
	return cmd, url + "/?token=" + token, waitServing(url)
}

func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// pageURL is page (a path) of the UI whose launch URL is launch, carrying its token: the
// browser trades it for a cookie and lands on page.
func pageURL(launch, page string) string {
	base, token, _ := strings.Cut(launch, "/?")
	sep := "?"
	if strings.Contains(page, "?") {
		sep = "&"
	}
	return base + page + sep + token
}

// waitServing waits until the UI answers, so the first screenshot is not of an error page.
func waitServing(url string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url + "/pipelines"); err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("sluice-ui did not answer on %s within 30s; see its log", url)
}

// screenshotter saves a picture of a UI page with Debian's Chromium, when it is installed.
type screenshotter struct {
	browser, dir, url string
	n                 int
}

func newScreenshotter(dir, url string, s *Story) *screenshotter {
	if dir == "" || url == "" {
		return nil
	}
	browser, err := exec.LookPath("chromium")
	if err != nil {
		s.Say("no chromium on this machine: no screenshots (apt-get install -y chromium)")
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.Say("no screenshots: %v", err)
		return nil
	}
	return &screenshotter{browser: browser, dir: dir, url: url}
}

// take saves page (a path such as /gates) as the next numbered picture.
func (sh *screenshotter) take(ctx context.Context, page string, s *Story) {
	if sh == nil || page == "" {
		return
	}
	sh.n++
	profile, err := os.MkdirTemp("", "sluice-demo-chromium-")
	if err != nil {
		return
	}
	defer os.RemoveAll(profile)
	out := filepath.Join(sh.dir, fmt.Sprintf("%02d-%s.png", sh.n, filepath.Base(page)))
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, sh.browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+profile, "--hide-scrollbars", "--window-size=1280,900", "--screenshot="+out, pageURL(sh.url, page))
	if output, err := cmd.CombinedOutput(); err != nil {
		s.Say("screenshot of %s failed: %v: %s", page, err, output)
		return
	}
	s.Say("UI screenshot: %s", out)
}
