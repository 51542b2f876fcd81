package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// axeSource is axe-core's script, installed from npm by hack/tools/axe/install.sh (make testbin
// runs it; so does this test when it is missing).
func axeSource(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	out, err := exec.Command("bash", filepath.Join(root, "hack", "tools", "axe", "install.sh")).Output()
	require.NoError(t, err, "install axe-core: %s", out)
	src, err := os.ReadFile(strings.TrimSpace(string(out)))
	require.NoError(t, err)
	return string(src)
}

// axeViolation is one rule axe-core finds broken, with where.
type axeViolation struct {
	ID, Impact, Help string
	Targets          []string
}

// seriousViolations runs axe-core on the page open in b and returns the violations of impact
// serious or critical. axe is evaluated through DevTools, which the page's
// Content-Security-Policy does not restrict; the page itself never loads it.
func seriousViolations(b context.Context, t *testing.T, axe string) []axeViolation {
	t.Helper()
	if !read(b, t, chromedp.Evaluate[bool](`typeof axe !== "undefined"`)) {
		read(b, t, chromedp.Evaluate[bool](axe+";true"))
	}
	var result struct {
		Passes     int
		Violations []axeViolation
	}
	result = read(b, t, chromedp.Evaluate[struct {
		Passes     int
		Violations []axeViolation
	}](`axe.run(document).then(r => ({Passes: r.passes.length, Violations: r.violations
		.filter(v => v.impact === "serious" || v.impact === "critical")
		.map(v => ({ID: v.id, Impact: v.impact, Help: v.help, Targets: v.nodes.map(n => n.target.join(" ")).slice(0, 5)}))}))`, chromedp.EvalAwaitPromise))
	require.NotZero(t, result.Passes, "axe-core checked rules on the page")
	return result.Violations
}

// TestEveryPageHasNoSeriousAccessibilityViolation runs axe-core in Chromium on every page, in
// the light and the dark theme and on a phone: none may have a violation of impact serious or
// critical.
func TestEveryPageHasNoSeriousAccessibilityViolation(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	gateController(t)
	ns := lookAndFeelObjects(t)
	createKustomization(t, ns, "apps", "freeze")
	axe := axeSource(t)
	b := browser(t)
	signIn(b, t, url)
	pages := []string{"/pipelines", "/pipelines/" + ns + "/checkout", "/pipelines/" + ns + "/checkout/history", "/gates",
		"/gates/" + ns + "/freeze", "/health", "/rollbacks", "/search?q=checkout", "/search", "/pipelines?q=no-such-pipeline",
		"/frozen", "/activity", "/activity?person=nobody-at-all", "/act/close-gate/" + ns + "/freeze",
		"/act/suspend/" + ns + "/checkout?kind=PromotionStrategy", "/gates/" + ns + "/no-such-gate"}
	for _, theme := range []string{"light", "dark"} {
		_, err := chromedp.Call(b, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: theme}}})
		require.NoError(t, err)
		for _, path := range pages {
			within(b, t, chromedp.Navigate(url+path), chromedp.WaitReady(css(`main`)))
			for _, v := range seriousViolations(b, t, axe) {
				assert.Fail(t, "accessibility", "%s (%s theme): %s %s: %s at %s", path, theme, v.Impact, v.ID, v.Help, strings.Join(v.Targets, "; "))
			}
		}
	}
	_, err := chromedp.Call(b, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 375, Height: 800, DeviceScaleFactor: 1, Mobile: true})
	require.NoError(t, err)
	for _, path := range pages[:5] {
		within(b, t, chromedp.Navigate(url+path), chromedp.WaitReady(css(`main`)))
		for _, v := range seriousViolations(b, t, axe) {
			assert.Fail(t, "accessibility", "%s (phone): %s %s: %s at %s", path, v.Impact, v.ID, v.Help, strings.Join(v.Targets, "; "))
		}
	}
	fmt.Fprintln(os.Stderr, "axe-core checked", 2*len(pages)+5, "page views")
}
