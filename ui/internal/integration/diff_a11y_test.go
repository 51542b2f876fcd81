package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// TestTheDiffPageHasNoSeriousAccessibilityViolation runs axe-core on a diff with added, removed
// and context lines, in the light and the dark theme: its colours must keep their contrast.
func TestTheDiffPageHasNoSeriousAccessibilityViolation(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	ns := newNamespace(t)
	ctx := context.Background()
	srv := gittest.NewServer(t)
	repo := srv.CreateRepo(t, "deploy")
	active := repo.CommitFiles(t, "env/dev", map[string]string{"web.yaml": "replicas: 2\nimage: web:1\n"}, "web 1")
	to := repo.CommitFiles(t, "env/dev", map[string]string{"web.yaml": "replicas: 2\nimage: web:2\n", "db.yaml": "kind: db\n"}, "web 2")
	_, err := env.Sluice.ScmV1alpha1().ScmProviders(ns).Create(ctx, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "git"}, Spec: scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGit}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Sluice.ScmV1alpha1().ScmRepositories(ns).Create(ctx, &scmv1alpha1.ScmRepository{ObjectMeta: metav1.ObjectMeta{Name: "repo"},
		Spec: scmv1alpha1.ScmRepositorySpec{URL: repo.URL(), AllowInsecureLoopbackHTTP: true, Owner: "acme", Name: "deploy",
			ProviderRef: scmv1alpha1.LocalObjectReference{Name: "git"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
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
