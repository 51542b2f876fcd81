package apitests

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scmv1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
)

func create(t *testing.T, spec scmv1.ScmProviderSpec) error {
	t.Helper()
	obj := &scmv1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "p-", Namespace: "default"},
		Spec:       spec,
	}
	_, err := client.ScmV1alpha1().ScmProviders("default").Create(context.Background(), obj, metav1.CreateOptions{})
	return err
}

func TestScmProviderValidation(t *testing.T) {
	secret := &scmv1.LocalObjectReference{Name: "github-token"}
	for _, tc := range []struct {
		name    string
		spec    scmv1.ScmProviderSpec
		wantErr string
	}{
		{name: "github.com", spec: scmv1.ScmProviderSpec{Type: scmv1.ScmProviderGitHub, SecretRef: secret}},
		{name: "enterprise app", spec: scmv1.ScmProviderSpec{Type: scmv1.ScmProviderGitHub, BaseURL: "https://ghe.example.com",
			SecretRef: secret, GitHubApp: &scmv1.GitHubApp{AppID: 1, InstallationID: 2},
			RateLimit: &scmv1.RateLimit{QPS: "1.25", Burst: 10}}},
		{name: "plain git needs no secret", spec: scmv1.ScmProviderSpec{Type: scmv1.ScmProviderGit}},
		{name: "loopback gitea over http", spec: scmv1.ScmProviderSpec{Type: scmv1.ScmProviderGitea, BaseURL: "http://127.0.0.1:3000",
			AllowInsecureLoopbackHTTP: true, SecretRef: secret}},
		{name: "gitea with a private CA", spec: scmv1.ScmProviderSpec{Type: scmv1.ScmProviderGitea, BaseURL: "https://gitea.internal",
			SecretRef: secret, CABundle: &scmv1.CABundleReference{Kind: "ConfigMap", Name: "ca"}}},

		{name: "unknown type", spec: scmv1.ScmProviderSpec{Type: "bitbucket", SecretRef: secret}, wantErr: "Unsupported value"},
		{name: "no secret", spec: scmv1.ScmProviderSpec{Type: scmv1.ScmProviderGitLab}, wantErr: "secretRef is required"},
		{name: "gitea without url", spec: scmv1.ScmProviderSpec{Type: scmv1.ScmProviderGitea, SecretRef: secret}, wantErr: "baseURL is required for gitea"},
		{name: "http to a remote host", spec: scmv1.ScmProviderSpec{Type: scmv1.ScmProviderGitea, BaseURL: "http://gitea.example.com",
			AllowInsecureLoopbackHTTP: true, SecretRef: secret}, wantErr: "baseURL must use https"},
		{name: "http without opting in", spec: scmv1.ScmProviderSpec{Type: scmv1.ScmProviderGitea, BaseURL: "http://127.0.0.1:3000",
			SecretRef: secret}, wantErr: "baseURL must use https"},
		{name: "credentials in url", spec: scmv1.ScmProviderSpec{Type: scmv1.ScmProviderGitLab, BaseURL: "https://u:p@gitlab.example.com",
			SecretRef: secret}, wantErr: "must not contain credentials"},
		{name: "not a url", spec: scmv1.ScmProviderSpec{Type: scmv1.ScmProviderGitLab, BaseURL: "gitlab.example.com", SecretRef: secret},
			wantErr: "absolute URL"},
		{name: "app on gitlab", spec: scmv1.ScmProviderSpec{Type: scmv1.ScmProviderGitLab, SecretRef: secret,
			GitHubApp: &scmv1.GitHubApp{AppID: 1, InstallationID: 2}}, wantErr: "githubApp applies only to type github"},
		{name: "zero qps", spec: scmv1.ScmProviderSpec{Type: scmv1.ScmProviderGitHub, SecretRef: secret,
			RateLimit: &scmv1.RateLimit{QPS: "0"}}, wantErr: "qps must be greater than zero"},
		{name: "qps not a number", spec: scmv1.ScmProviderSpec{Type: scmv1.ScmProviderGitHub, SecretRef: secret,
			RateLimit: &scmv1.RateLimit{QPS: "fast"}}, wantErr: "should match"},
		{name: "baseURL for plain git", spec: scmv1.ScmProviderSpec{Type: scmv1.ScmProviderGit, BaseURL: "https://git.example.com"},
			wantErr: "baseURL has no meaning for type git"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := create(t, tc.spec)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestScmRepositoryValidation(t *testing.T) {
	base := func(url string) scmv1.ScmRepositorySpec {
		return scmv1.ScmRepositorySpec{URL: url, ProviderRef: scmv1.LocalObjectReference{Name: "github"}, Owner: "acme", Name: "app"}
	}
	with := func(s scmv1.ScmRepositorySpec, f func(*scmv1.ScmRepositorySpec)) scmv1.ScmRepositorySpec {
		f(&s)
		return s
	}
	tokenAuth := &scmv1.GitAuth{Type: scmv1.GitAuthToken, SecretRef: scmv1.LocalObjectReference{Name: "git"}}
	sshAuth := &scmv1.GitAuth{Type: scmv1.GitAuthSSH, SecretRef: scmv1.LocalObjectReference{Name: "git"}}
	for _, tc := range []struct {
		name    string
		spec    scmv1.ScmRepositorySpec
		wantErr string
	}{
		{name: "https with token", spec: with(base("https://github.com/acme/app.git"), func(s *scmv1.ScmRepositorySpec) { s.Auth = tokenAuth })},
		{name: "ssh url", spec: with(base("ssh://git@github.com/acme/app.git"), func(s *scmv1.ScmRepositorySpec) { s.Auth = sshAuth })},
		{name: "scp-like", spec: with(base("git@github.com:acme/app.git"), func(s *scmv1.ScmRepositorySpec) { s.Auth = sshAuth })},
		{name: "gitlab subgroup", spec: with(base("https://gitlab.com/group/sub/app.git"), func(s *scmv1.ScmRepositorySpec) { s.Owner = "group/sub" })},
		{name: "loopback http", spec: with(base("http://127.0.0.1:8080/app.git"), func(s *scmv1.ScmRepositorySpec) { s.AllowInsecureLoopbackHTTP = true })},

		{name: "http remote", spec: base("http://github.com/acme/app.git"), wantErr: "url must be https"},
		{name: "file url", spec: base("file:///srv/app.git"), wantErr: "url must be https"},
		{name: "token in url", spec: base("https://x-access-token:ghp_abc@github.com/acme/app.git"), wantErr: "must not contain credentials"},
		{name: "password in ssh url", spec: base("ssh://git:secret@github.com/acme/app.git"), wantErr: "must not contain credentials"},
		{name: "ssh auth over https", spec: with(base("https://github.com/acme/app.git"), func(s *scmv1.ScmRepositorySpec) { s.Auth = sshAuth }),
			wantErr: "auth.type ssh needs an ssh URL"},
		{name: "token auth over ssh", spec: with(base("git@github.com:acme/app.git"), func(s *scmv1.ScmRepositorySpec) { s.Auth = tokenAuth }),
			wantErr: "auth.type ssh needs an ssh URL"},
		{name: "bad owner", spec: with(base("https://github.com/acme/app.git"), func(s *scmv1.ScmRepositorySpec) { s.Owner = "acme/" }), wantErr: "should match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &scmv1.ScmRepository{ObjectMeta: metav1.ObjectMeta{GenerateName: "r-", Namespace: "default"}, Spec: tc.spec}
			_, err := client.ScmV1alpha1().ScmRepositories("default").Create(context.Background(), obj, metav1.CreateOptions{})
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}
