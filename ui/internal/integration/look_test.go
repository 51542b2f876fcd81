package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// lookAndFeelObjects makes a pipeline whose environment waits on a closed gate with windows,
// and returns its namespace.
func lookAndFeelObjects(t *testing.T) string {
	t.Helper()
	ns := newNamespace(t)
	_, err := env.Sluice.GatingV1alpha1().Gates(ns).Create(context.Background(), &gatingv1alpha1.Gate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "freeze"},
		Spec: gatingv1alpha1.GateSpec{Closed: true, Message: "release 1.4 sign-off pending from the payments team and security review",
			Windows: []gatingv1alpha1.GateWindow{{Schedule: "0 15 * * 5", Duration: metav1.Duration{Duration: 65 * time.Hour}, TimeZone: "Europe/Berlin",
				Kind: gatingv1alpha1.StateClosed, Description: "No deploy Friday"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	createStrategy(t, ns, promoterv1alpha1.EnvironmentStatus{Branch: "env/dev",
		Active:             promoterv1alpha1.CommitState{DrySHA: oldSHA, HydratedSHA: newSHA, Phase: "success", Subject: "checkout: a long commit subject that goes on and on about what changed and why it matters"},
		Proposed:           promoterv1alpha1.CommitState{DrySHA: newSHA, Phase: "pending"},
		Blocked:            "gate " + ns + "/freeze is closed: release 1.4 sign-off pending from the payments team and security review",
		LastHealthyDrySHAs: []promoterv1alpha1.HealthyDrySHA{{SHA: oldSHA, Time: metav1.NewTime(time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC))}},
		History:            []promoterv1alpha1.PromotionRecord{{DrySHA: oldSHA, Time: metav1.NewTime(time.Now().Add(-time.Hour))}},
	})
	return ns
}

// bodyColours are the computed background and text colours of the page's body.
func bodyColours(b context.Context, t *testing.T) string {
	t.Helper()
	return read(b, t, chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor + " " + getComputedStyle(document.body).color`))
}

// TestDarkModeFollowsTheSystemAndTheToggleIsRemembered: with the system dark, the page is dark;
// the toggle chooses light over it, and a new page remembers the choice.
func TestDarkModeFollowsTheSystemAndTheToggleIsRemembered(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	b := browser(t)
	signIn(b, t, url)
	scheme := func(s string) {
		_, err := chromedp.Call(b, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: s}}})
		require.NoError(t, err)
	}
	const dark, light = "rgb(13, 17, 23) rgb(230, 237, 243)", "rgb(255, 255, 255) rgb(27, 31, 36)"
	scheme("light")
	within(b, t, chromedp.Navigate(url+"/pipelines"), chromedp.WaitVisible(css(`#theme`)))
	assert.Equal(t, light, bodyColours(b, t), "a light system, a light page")
	scheme("dark")
	assert.Equal(t, dark, bodyColours(b, t), "a dark system, a dark page")
	screenshot(b, t, "dark")
	within(b, t, chromedp.Click(css(`#theme`)), chromedp.Click(css(`#theme`)))
	assert.Equal(t, "Theme: light", read(b, t, chromedp.Text(css(`#theme`))))
	assert.Equal(t, light, bodyColours(b, t), "the toggle chose light over the dark system")
	within(b, t, chromedp.Navigate(url+"/gates"), chromedp.WaitVisible(css(`#theme`)))
	assert.Equal(t, light, bodyColours(b, t), "remembered on the next page")
	within(b, t, chromedp.Click(css(`#theme`)))
	assert.Equal(t, "Theme: auto", read(b, t, chromedp.Text(css(`#theme`))))
	assert.Equal(t, dark, bodyColours(b, t), "auto: the system decides again")
}

// TestEveryPageFitsAPhoneAndShowsTimesInThePersonsZone: at 375 pixels wide no page scrolls
// sideways (wide tables scroll inside themselves), times read in the browser's time zone with
// UTC on hover, the gate timeline carries its day ticks, and a search with no match says so.
func TestEveryPageFitsAPhoneAndShowsTimesInThePersonsZone(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	ns := lookAndFeelObjects(t)
	b := browser(t)
	_, err := chromedp.Call(b, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Tokyo"})
	require.NoError(t, err)
	_, err = chromedp.Call(b, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 375, Height: 800, DeviceScaleFactor: 1, Mobile: true})
	require.NoError(t, err)
	signIn(b, t, url)
	for _, path := range []string{"/pipelines", "/pipelines/" + ns + "/checkout", "/pipelines/" + ns + "/checkout/history", "/gates",
		"/gates/" + ns + "/freeze", "/health", "/rollbacks", "/search?q=checkout", "/pipelines?q=no-such-pipeline", "/act/close-gate/" + ns + "/freeze"} {
		within(b, t, chromedp.Navigate(url+path), chromedp.WaitReady(css(`main`)))
		overflow := read(b, t, chromedp.Evaluate[int](`document.documentElement.scrollWidth - document.documentElement.clientWidth`))
		assert.LessOrEqual(t, overflow, 0, "%s scrolls sideways on a phone", path)
	}
	within(b, t, chromedp.Navigate(url+"/pipelines?q=no-such-pipeline"), chromedp.WaitVisible(css(`#no-match`)))
	assert.Contains(t, textOf(b, t, `#no-match`), "No pipeline matches “no-such-pipeline”")

	within(b, t, chromedp.Navigate(url+"/pipelines/"+ns+"/checkout"), chromedp.WaitVisible(css(`#live.on`)))
	title := read(b, t, chromedp.Evaluate[string](`document.querySelector('[data-branch="env/dev"] time').title`))
	assert.Equal(t, "2026-11-20 12:00 UTC", title, "UTC on hover")
	local := textOf(b, t, `[data-branch="env/dev"] time`)
	assert.Contains(t, local, "09:00 PM", "12:00 UTC is 21:00 in Tokyo")
	assert.Contains(t, local, "GMT+9", "the zone is named")
	screenshot(b, t, "phone")

	_, err = chromedp.Call(b, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 1280, Height: 900, DeviceScaleFactor: 1})
	require.NoError(t, err)
	within(b, t, chromedp.Navigate(url+"/gates/"+ns+"/freeze"), chromedp.WaitVisible(css(`.week .days.placed`)))
	ticks := read(b, t, chromedp.Evaluate[int](`document.querySelectorAll('.week svg line.tick').length`))
	assert.Equal(t, 7, ticks, "a tick at each midnight of the seven days")
	labels := textOf(b, t, `.week .days`)
	assert.True(t, strings.HasPrefix(labels, "▲ now"), labels)
	segments := textOf(b, t, `.week .segments`)
	assert.Regexp(t, `closed from \w{3} \d{1,2} \w{3} \d\d:\d\d until after \w{3} \d{1,2} \w{3} \d\d:\d\d`, segments, "dated, and open-ended past the timeline")
}
