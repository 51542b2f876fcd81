package scm_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scmv1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
)

func provider(spec scmv1.ScmProviderSpec) *scmv1.ScmProvider {
	return &scmv1.ScmProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "github"}, Spec: spec}
}

func TestConfigFor(t *testing.T) {
	secretRef := &scmv1.LocalObjectReference{Name: "gh"}

	cfg, err := scm.ConfigFor(provider(scmv1.ScmProviderSpec{
		Type: scmv1.ScmProviderGitHub, SecretRef: secretRef, BaseURL: "https://ghe.example.com",
		RateLimit: &scmv1.RateLimit{QPS: "2.5"},
	}), map[string][]byte{"token": []byte("ghp_x"), "webhookSecret": []byte("w")}, []byte("pem"))
	require.NoError(t, err)
	assert.Equal(t, "team-a/github", cfg.Key)
	assert.Equal(t, "ghp_x", cfg.Credentials.Token)
	assert.Equal(t, []byte("w"), cfg.Credentials.WebhookSecret)
	assert.Equal(t, []byte("pem"), cfg.CABundle)
	assert.Equal(t, ratelimit.Limits{QPS: 2.5}, cfg.RateLimit)
	assert.Equal(t, ratelimit.Limits{QPS: 2.5, Burst: 10}, cfg.RateLimit.OrDefault(ratelimit.Limits{QPS: 1, Burst: 10}),
		"an unset burst comes from the provider's defaults")

	app, err := scm.ConfigFor(provider(scmv1.ScmProviderSpec{
		Type: scmv1.ScmProviderGitHub, SecretRef: secretRef, GitHubApp: &scmv1.GitHubApp{AppID: 7, InstallationID: 8},
	}), map[string][]byte{"githubAppPrivateKey": []byte("KEY")}, nil)
	require.NoError(t, err)
	require.NotNil(t, app.Credentials.GitHubApp)
	assert.Equal(t, int64(7), app.Credentials.GitHubApp.AppID)

	_, err = scm.ConfigFor(provider(scmv1.ScmProviderSpec{Type: scmv1.ScmProviderGitLab, SecretRef: secretRef}),
		map[string][]byte{"tokn": []byte("glpat-secret")}, nil)
	require.ErrorContains(t, err, `secret "gh" has no key token`)
	assert.NotContains(t, err.Error(), "glpat-secret")

	_, err = scm.ConfigFor(provider(scmv1.ScmProviderSpec{
		Type: scmv1.ScmProviderGitHub, SecretRef: secretRef, GitHubApp: &scmv1.GitHubApp{AppID: 7, InstallationID: 8},
	}), map[string][]byte{"token": []byte("t")}, nil)
	require.ErrorContains(t, err, "no key githubAppPrivateKey")

	plain, err := scm.ConfigFor(provider(scmv1.ScmProviderSpec{Type: scmv1.ScmProviderGit}), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, scm.Credentials{}, plain.Credentials)

	_, err = scm.ConfigFor(provider(scmv1.ScmProviderSpec{Type: scmv1.ScmProviderGitHub, SecretRef: secretRef,
		RateLimit: &scmv1.RateLimit{QPS: "-1"}}), map[string][]byte{"token": []byte("t")}, nil)
	require.ErrorContains(t, err, "not a positive decimal")
}

func TestRepositoryFor(t *testing.T) {
	r := &scmv1.ScmRepository{Spec: scmv1.ScmRepositorySpec{Owner: "group/sub", Name: "app"}}
	assert.Equal(t, scm.Repository{Owner: "group/sub", Name: "app"}, scm.RepositoryFor(r))
}
