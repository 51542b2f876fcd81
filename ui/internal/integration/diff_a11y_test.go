package integration

import (
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// TestTheDiffPageHasNoSeriousAccessibilityViolation runs axe-core on a diff with added, removed
// and context lines, in the light and the dark theme: its colours must keep their contrast.
func TestTheDiffPageHasNoSeriousAccessibilityViolation(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	ns := newNamespace(t)
	srv := gittest.NewServer(t)
	repo := srv.CreateRepo(t, "deploy")
	active := repo.CommitFiles(t, "env/dev", map[string]string{"web.yaml": "replicas: 2\nimage: web:1\n"}, "web 1")
	to := repo.CommitFiles(t, "env/dev", map[string]string{"web.yaml": "replicas: 2\nimage: web:2\n", "db.yaml": "kind: db\n"}, "web 2")
	createScmRepository(t, ns, repo.URL())
	createStrategy(t, ns, promoterv1alpha1.EnvironmentStatus{Branch: "env/dev",
		Active: promoterv1alpha1.CommitState{DrySHA: oldSHA, HydratedSHA: active}, Proposed: promoterv1alpha1.CommitState{DrySHA: newSHA, HydratedSHA: to}})
	axe := axeSource(t)
	b := browser(t)
	signIn(b, t, url)
	for _, theme := range []string{"light", "dark"} {
		_, err := chromedp.Call(b, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: theme}}})
		require.NoError(t, err)
		within(b, t, chromedp.Navigate(url+"/pipelines/"+ns+"/checkout/diff?env=env%2Fdev&from="+active+"&to="+to), chromedp.WaitVisible(css(`section.file .line.add`)))
		for _, v := range seriousViolations(b, t, axe) {
			assert.Fail(t, "accessibility", "diff page (%s theme): %s %s: %s at %s", theme, v.Impact, v.ID, v.Help, strings.Join(v.Targets, "; "))
		}
	}
}
