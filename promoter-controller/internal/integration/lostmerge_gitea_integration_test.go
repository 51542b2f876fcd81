package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
	giteatest "github.com/sluicehq/sluice/testenv/gitea"
)

// A merge on Gitea whose reply was lost: the promoter stopped (a leader's pod deleted) while
// Gitea merged, and Gitea, its request cut short, pushed the merge but kept the pull request
// open. Gitea then refuses to merge it ("try again later") for ever. The PullRequest is recorded
// merged, by the earlier attempt, instead of being retried for ever; make e2e found this on a
// real node.
func TestMergeWhoseReplyWasLostOnGitea(t *testing.T) {
	f := newFixture(t)
	ctx := f.ctx
	srv, cloneURL, repo, d0 := giteaRepo(t, map[string][]byte{"values.yaml": []byte("v: 0\n")})
	base := hydrateTo(t, repo, "", "dev", d0, "v: 0\n")
	head := hydrateTo(t, repo, "dev", "dev-next", d0, "v: 1\n")

	var opened struct {
		Number int64 `json:"number"`
	}
	require.NoError(t, srv.API(ctx, "POST", "/repos/"+srv.AdminUser+"/app/pulls",
		map[string]string{"head": "dev-next", "base": "dev", "title": "Promote to dev"}, &opened))
	// What Gitea's merge did before its request was cut short: the target holds the head.
	require.NoError(t, repo.Push(ctx, "dev", head, base))
	err := srv.API(ctx, "POST", fmt.Sprintf("/repos/%s/app/pulls/%d/merge", srv.AdminUser, opened.Number),
		map[string]any{"Do": "merge", "head_commit_id": head}, nil)
	require.Error(t, err, "the premise: Gitea refuses to merge a pull request whose head its target holds")
	t.Logf("Gitea answers: %v", err)

	giteaRepository(t, f, srv, cloneURL)
	prs := env.Sluice.PromoterV1alpha1().PullRequests(f.ns)
	asked := envPullRequest("dev", promoterv1alpha1.PullRequestMerged)
	asked.Spec.ExpectedHeadSHA = head
	pr, err := prs.Create(ctx, asked, metav1.CreateOptions{})
	require.NoError(t, err)
	// The number recorded before the merge was asked for.
	pr.Status.ID = fmt.Sprint(opened.Number)
	_, err = prs.UpdateStatus(ctx, pr, metav1.UpdateOptions{})
	require.NoError(t, err)

	startPromoter(t, env.Config, t.TempDir())
	merged := testenv.WaitForObject(t, time.Minute, prs, "app-dev", func(p *promoterv1alpha1.PullRequest) bool {
		return p.Status.State == promoterv1alpha1.PullRequestMerged
	})
	assert.Equal(t, head, merged.Status.MergedHeadSHA)
	assert.Equal(t, head, merged.Status.MergeSHA, "the target's commit that holds the head")
	assert.False(t, merged.Status.MergedExternally, "Sluice's own merge, finished after its reply was lost")
}

// giteaRepository creates the Secret, ScmProvider and ScmRepository gitea-app for a repository
// on srv.
func giteaRepository(t *testing.T, f *fixture, srv *giteatest.Server, cloneURL string) {
	t.Helper()
	giteaRepositoryAt(t, f, srv, srv.URL, cloneURL)
}

// giteaRepositoryAt is giteaRepository with the API reached at apiURL (a counting proxy's).
func giteaRepositoryAt(t *testing.T, f *fixture, srv *giteatest.Server, apiURL, cloneURL string) {
	t.Helper()
	_, err := env.Kube.CoreV1().Secrets(f.ns).Create(f.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea"},
		Data: map[string][]byte{
			scmv1alpha1.SecretKeyToken:       []byte(srv.Token),
			scmv1alpha1.GitSecretKeyUsername: []byte(srv.AdminUser), scmv1alpha1.GitSecretKeyPassword: []byte(srv.Token),
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Sluice.ScmV1alpha1().ScmProviders(f.ns).Create(f.ctx, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea"},
		Spec: scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGitea, BaseURL: apiURL, AllowInsecureLoopbackHTTP: true,
			SecretRef: &scmv1alpha1.LocalObjectReference{Name: "gitea"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Sluice.ScmV1alpha1().ScmRepositories(f.ns).Create(f.ctx, &scmv1alpha1.ScmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea-app"},
		Spec: scmv1alpha1.ScmRepositorySpec{
			URL: cloneURL, AllowInsecureLoopbackHTTP: true, ProviderRef: scmv1alpha1.LocalObjectReference{Name: "gitea"},
			Owner: srv.AdminUser, Name: "app",
			Auth: &scmv1alpha1.GitAuth{Type: scmv1alpha1.GitAuthBasic, SecretRef: scmv1alpha1.LocalObjectReference{Name: "gitea"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}
