package scmobjects

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
)

func TestReferrersOfASecret(t *testing.T) {
	providers := cache.NewIndexer(cache.MetaNamespaceKeyFunc, SecretIndexers)
	repos := cache.NewIndexer(cache.MetaNamespaceKeyFunc, SecretIndexers)
	require.NoError(t, providers.Add(githubProvider(func(p *scmv1alpha1.ScmProvider) {
		p.Spec.CABundle = &scmv1alpha1.CABundleReference{Kind: "Secret", Name: "corp-ca"}
	})))
	require.NoError(t, providers.Add(githubProvider(func(p *scmv1alpha1.ScmProvider) {
		p.Name = "ghes"
		p.Spec.CABundle = &scmv1alpha1.CABundleReference{Kind: "ConfigMap", Name: "corp-ca"}
	})))
	require.NoError(t, providers.Add(githubProvider(func(p *scmv1alpha1.ScmProvider) {
		p.Name, p.Spec.Type, p.Spec.SecretRef = "plain", scmv1alpha1.ScmProviderGit, nil
	})))
	require.NoError(t, repos.Add(repository(withAuth(scmv1alpha1.GitAuthToken, "https://github.com/acme/app.git"))))
	require.NoError(t, repos.Add(repository(func(r *scmv1alpha1.ScmRepository) { r.Name = "public" })))

	secret := func(namespace, name string) metav1.Object {
		return &metav1.ObjectMeta{Namespace: namespace, Name: name}
	}
	assert.ElementsMatch(t, []string{"team/github", "team/ghes"}, Referrers(providers, secret(ns, "github-token")))
	assert.Equal(t, []string{"team/github"}, Referrers(providers, secret(ns, "corp-ca")), "a ConfigMap of the same name is not a Secret")
	assert.Equal(t, []string{"team/app"}, Referrers(repos, secret(ns, "git-creds")))
	assert.Empty(t, Referrers(repos, secret("other", "git-creds")), "references are local to the namespace")
	assert.Empty(t, Referrers(providers, secret(ns, "unrelated")))
}

func TestProviderVerdictChanged(t *testing.T) {
	base := readyProvider(nil)
	base.ResourceVersion = "1"
	touched := base.DeepCopy()
	touched.ResourceVersion = "2"
	assert.False(t, ProviderVerdictChanged(base, touched), "a write that changed nothing a repository reads")

	respec := base.DeepCopy()
	respec.Generation++
	assert.True(t, ProviderVerdictChanged(base, respec))

	annotated := base.DeepCopy()
	annotated.Annotations = map[string]string{"reconcile.fluxcd.io/suspended": "migration"}
	assert.True(t, ProviderVerdictChanged(base, annotated))

	failed := base.DeepCopy()
	conditions.MarkStalled(&failed.Status.Conditions, base.Generation, "SecretNotFound", "gone")
	assert.True(t, ProviderVerdictChanged(base, failed))

	unchecked := githubProvider(nil)
	assert.True(t, ProviderVerdictChanged(unchecked, base), "the first verdict")
}

func TestCheckRepositoryURL(t *testing.T) {
	for _, tc := range []struct {
		url       string
		loopback  bool
		ssh       bool
		errorPart string
	}{
		{url: "https://github.com/acme/app.git"},
		{url: "ssh://git@github.com/acme/app.git", ssh: true},
		{url: "git@github.com:acme/app.git", ssh: true},
		{url: "http://localhost:3000/acme/app.git", loopback: true},
		{url: "http://[::1]:3000/acme/app.git", loopback: true},
		{url: "http://localhost:3000/acme/app.git", errorPart: "uses http"},
		{url: "http://gitea.example.com/acme/app.git", loopback: true, errorPart: "uses http"},
		{url: "https://bot@github.com/acme/app.git", errorPart: "carries a user name"},
		{url: "ssh://git:pw@github.com/acme/app.git", errorPart: "carries a password"},
		{url: "git://github.com/acme/app.git", errorPart: `has scheme "git"`},
		{url: "/srv/git/app.git", errorPart: "fix spec.url"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			ssh, err := checkRepositoryURL(tc.url, tc.loopback)
			if tc.errorPart != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.errorPart)
				assert.NotContains(t, err.Error(), ":pw@")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.ssh, ssh)
		})
	}
}
