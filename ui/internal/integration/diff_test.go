package integration

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// TestTheDiffPageShowsTheChangeReadWithTheCredentialsThePersonMayRead: a real git server that
// asks for basic auth holds an environment's active and proposed hydrated commits; its
// ScmRepository's credentials are a Secret. Behind the authenticating proxy, alice, whose group
// may get that Secret, follows the card's diff link and sees the changed line; bob, who may not,
// gets the refusal and no diff, though the UI's own identity could read the Secret.
func TestTheDiffPageShowsTheChangeReadWithTheCredentialsThePersonMayRead(t *testing.T) {
	socket := proxySocketPath(t)
	startUI(t, env.Config, setup.Config{Identity: setup.IdentityProxy, UserHeader: "X-Forwarded-User",
		GroupsHeader: "X-Forwarded-Groups", ProxySocket: socket})
	url := sidecarProxy(t, socket)
	ns := newNamespace(t)
	ctx := context.Background()

	srv := gittest.NewServer(t, gittest.WithBasicAuth("deployer", "s3cret"))
	repo := srv.CreateRepo(t, "deploy")
	active := repo.CommitFiles(t, "env/dev", map[string]string{"web.yaml": "replicas: 2\nimage: web:1\n", "db.yaml": "kind: db\n"}, "web 1")
	repo.SetBranch(t, "env/dev-next", active)
	proposed := repo.CommitFiles(t, "env/dev-next", map[string]string{"web.yaml": "replicas: 2\nimage: web:2\n"}, "web 2")

	_, err := env.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "deploy-creds"},
		Data: map[string][]byte{scmv1alpha1.GitSecretKeyUsername: []byte("deployer"), scmv1alpha1.GitSecretKeyPassword: []byte("s3cret")}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Sluice.ScmV1alpha1().ScmProviders(ns).Create(ctx, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "git"}, Spec: scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGit}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Sluice.ScmV1alpha1().ScmRepositories(ns).Create(ctx, &scmv1alpha1.ScmRepository{ObjectMeta: metav1.ObjectMeta{Name: "repo"},
		Spec: scmv1alpha1.ScmRepositorySpec{URL: repo.URL(), AllowInsecureLoopbackHTTP: true, Owner: "acme", Name: "deploy",
			ProviderRef: scmv1alpha1.LocalObjectReference{Name: "git"},
			Auth:        &scmv1alpha1.GitAuth{Type: scmv1alpha1.GitAuthBasic, SecretRef: scmv1alpha1.LocalObjectReference{Name: "deploy-creds"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	createStrategy(t, ns, promoterv1alpha1.EnvironmentStatus{Branch: "env/dev",
		Active:   promoterv1alpha1.CommitState{DrySHA: oldSHA, HydratedSHA: active},
		Proposed: promoterv1alpha1.CommitState{DrySHA: newSHA, HydratedSHA: proposed},
		// The history: oldSHA reached dev at active, then newSHA at proposed (as a fast-forward).
		History: []promoterv1alpha1.PromotionRecord{
			{DrySHA: newSHA, HydratedSHA: proposed, MergeSHA: proposed, Time: metav1.Now()},
			{DrySHA: oldSHA, HydratedSHA: active, MergeSHA: active, Time: metav1.NewTime(time.Now().Add(-time.Hour))},
		}})
	secretReaders(t, ns, "release-managers", "deploy-creds")
	pipelineReaders(t, ns, "release-managers", "devs")

	alice := browser(t)
	proxyHeaders(t, alice, network.Headers{"X-Forwarded-User": "alice", "X-Forwarded-Groups": "release-managers"})
	within(alice, t, chromedp.Navigate(url+"/pipelines/"+ns+"/checkout"), chromedp.WaitVisible(css(`#env-env-dev a.diff`)))
	assert.Zero(t, read(alice, t, chromedp.Evaluate[int](`document.querySelectorAll('#env-env-dev a.compare').length`)),
		"plain git has no compare page")
	// Links are followed by their address: a live update of the page may replace one mid-click.
	within(alice, t, chromedp.Navigate(diffLink(alice, t)), chromedp.WaitVisible(css(`section.file`)))
	files := read(alice, t, chromedp.Evaluate[[]string](`[...document.querySelectorAll('section.file')].map(s => s.dataset.file)`))
	assert.Equal(t, []string{"web.yaml"}, files, "only the changed file")
	added := read(alice, t, chromedp.Evaluate[[]string](`[...document.querySelectorAll('section.file .line.add')].map(l => l.textContent)`))
	removed := read(alice, t, chromedp.Evaluate[[]string](`[...document.querySelectorAll('section.file .line.del')].map(l => l.textContent)`))
	assert.Equal(t, []string{"+image: web:2"}, added)
	assert.Equal(t, []string{"-image: web:1"}, removed)
	screenshot(alice, t, "diff")

	// The history row of newSHA links the change its promotion brought: the same lines.
	within(alice, t, chromedp.Navigate(url+"/pipelines/"+ns+"/checkout/history"),
		chromedp.WaitVisible(css(`#commit-`+newSHA+` td[data-branch="env/dev"] a.diff`)))
	link := read(alice, t, chromedp.Evaluate[string](`document.querySelector('#commit-`+newSHA+` td[data-branch="env/dev"] a.diff').href`))
	within(alice, t, chromedp.Navigate(link), chromedp.WaitVisible(css(`section.file`)))
	added = read(alice, t, chromedp.Evaluate[[]string](`[...document.querySelectorAll('section.file .line.add')].map(l => l.textContent)`))
	assert.Equal(t, []string{"+image: web:2"}, added, "from the tip the promotion before it left")

	bob := browser(t)
	proxyHeaders(t, bob, network.Headers{"X-Forwarded-User": "bob", "X-Forwarded-Groups": "devs"})
	within(bob, t, chromedp.Navigate(url+"/pipelines/"+ns+"/checkout"), chromedp.WaitVisible(css(`#env-env-dev a.diff`)))
	within(bob, t, chromedp.Navigate(diffLink(bob, t)), chromedp.WaitVisible(css(`#diff-error`)))
	refused := read(bob, t, chromedp.Text(css(`#diff-error`)))
	assert.Contains(t, refused, "You may not read Secret "+ns+"/deploy-creds")
	assert.Contains(t, refused, `User "bob" cannot get resource "secrets"`, "the API server's own words")
	assert.Zero(t, read(bob, t, chromedp.Evaluate[int](`document.querySelectorAll('section.file').length`)), "no diff")
}

// diffLink is the address of the dev card's diff link on the page the browser shows.
func diffLink(ctx context.Context, t *testing.T) string {
	t.Helper()
	return read(ctx, t, chromedp.Evaluate[string](`document.querySelector('#env-env-dev a.diff').href`))
}

// secretReaders lets group get the Secrets named in ns, and nothing else of them.
func secretReaders(t *testing.T, ns, group string, secrets ...string) {
	t.Helper()
	ctx := context.Background()
	_, err := env.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "repo-readers"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: secrets, Verbs: []string{"get"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "repo-readers"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "repo-readers"},
		Subjects: []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: group}}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// pipelineReaders lets groups read the strategies and repositories of ns, as a UI that shows
// each person only what they may read needs.
func pipelineReaders(t *testing.T, ns string, groups ...string) {
	t.Helper()
	ctx := context.Background()
	_, err := env.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pipeline-readers"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"promoter.sluice.dev"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"scm.sluice.dev"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"rollback.sluice.dev"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
		}}, metav1.CreateOptions{})
	require.NoError(t, err)
	var subjects []rbacv1.Subject
	for _, g := range groups {
		subjects = append(subjects, rbacv1.Subject{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: g})
	}
	_, err = env.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pipeline-readers"},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "pipeline-readers"}, Subjects: subjects}, metav1.CreateOptions{})
	require.NoError(t, err)
}
