package git_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	scmv1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/git/gittest"
)

func TestSSHTransportWithKnownHosts(t *testing.T) {
	f := newFixture(t)
	ssh := f.srv.StartSSH(t)
	active := f.hydrated(t, "dev", dry(1), "one")
	f.remote.SetBranch(t, "dev-next", active)
	proposed := f.hydrated(t, "dev-next", dry(2), "two")
	repo, err := f.cache.Open(ssh.URL("app"), git.Auth{SSHPrivateKey: ssh.ClientKey, SSHKnownHosts: ssh.KnownHosts}, git.Options{})
	require.NoError(t, err)

	require.NoError(t, repo.Fetch(ctx(t), "dev", "dev-next"))
	res, err := repo.MergeAndPush(ctx(t), "dev-next", "dev", active, 0, git.MergeOptions{})

	require.NoError(t, err)
	assert.Equal(t, git.MergeFastForward, res.Kind)
	assert.Equal(t, proposed, f.remote.Branch(t, "dev"), "the push went over SSH")
}

func TestSSHRefusesHostKeysNotInKnownHosts(t *testing.T) {
	f := newFixture(t)
	ssh := f.srv.StartSSH(t)
	f.hydrated(t, "dev", dry(1), "one")

	for _, tc := range []struct {
		name       string
		knownHosts []byte
		want       error
	}{
		{"another key for the host", gittest.KnownHostsWithOtherKey(t, ssh.Addr), git.ErrHostKeyMismatch},
		{"only other hosts", gittest.KnownHostsWithOtherKey(t, "git.example.com:22"), git.ErrUnknownHostKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, err := f.cache.Open(ssh.URL("app"), git.Auth{SSHPrivateKey: ssh.ClientKey, SSHKnownHosts: tc.knownHosts}, git.Options{})
			require.NoError(t, err)

			err = repo.Fetch(ctx(t), "dev")

			require.ErrorIs(t, err, tc.want)
			var hostKey *git.HostKeyError
			require.ErrorAs(t, err, &hostKey)
			assert.Equal(t, ssh.HostKey.Type(), hostKey.KeyType)
			assert.Contains(t, err.Error(), "known_hosts")
			assert.NotContains(t, err.Error(), string(ssh.ClientKey))
			_, err = repo.Resolve("dev")
			assert.ErrorIs(t, err, git.ErrBranchNotFound, "nothing was fetched from an unverified host")
		})
	}
}

func TestSSHWithAnUnauthorisedKey(t *testing.T) {
	f := newFixture(t)
	ssh := f.srv.StartSSH(t)
	f.hydrated(t, "dev", dry(1), "one")
	otherKey, _ := gittest.NewPrivateKey(t)
	repo, err := f.cache.Open(ssh.URL("app"), git.Auth{SSHPrivateKey: otherKey, SSHKnownHosts: ssh.KnownHosts}, git.Options{})
	require.NoError(t, err)

	err = repo.Fetch(ctx(t), "dev")

	assert.ErrorIs(t, err, git.ErrAuthentication)
	assert.NotContains(t, err.Error(), string(otherKey))
}

func TestHTTPBasicAuthAndToken(t *testing.T) {
	const password = "s3cr3t-password-value"
	f := newFixture(t, gittest.WithBasicAuth(git.DefaultTokenUsername, password))
	f.hydrated(t, "dev", dry(1), "one")

	for _, tc := range []struct {
		name string
		auth git.Auth
		ok   bool
	}{
		{"basic", git.Auth{Username: git.DefaultTokenUsername, Password: password}, true},
		{"token with the default user name", git.Auth{Token: password}, true},
		{"wrong password", git.Auth{Username: git.DefaultTokenUsername, Password: "wrong-password-1234"}, false},
		{"wrong token", git.Auth{Token: "ghp_wrongtokenvalue1234"}, false},
		{"no credentials", git.Auth{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, err := f.cache.Open(f.remote.URL(), tc.auth, git.Options{})
			require.NoError(t, err)

			err = repo.Fetch(ctx(t), "dev")

			if tc.ok {
				require.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, git.ErrAuthentication)
			for _, secret := range []string{tc.auth.Password, tc.auth.Token, password} {
				if secret != "" {
					assert.NotContains(t, err.Error(), secret)
				}
			}
		})
	}
}

func TestHTTPSWithACABundle(t *testing.T) {
	f := newFixture(t, gittest.WithTLS())
	dev := f.hydrated(t, "dev", dry(1), "one")

	untrusted, err := f.cache.Open(f.remote.URL(), git.Auth{}, git.Options{})
	require.NoError(t, err)
	assert.ErrorContains(t, untrusted.Fetch(ctx(t), "dev"), "certificate")

	trusted, err := f.cache.Open(f.remote.URL(), git.Auth{CABundle: f.srv.CACert()}, git.Options{})
	require.NoError(t, err)
	require.NoError(t, trusted.Fetch(ctx(t), "dev"))
	got, err := trusted.Resolve("dev")
	require.NoError(t, err)
	assert.Equal(t, dev, got)
}

func TestURLsWithCredentialsAreRefused(t *testing.T) {
	f := newFixture(t)
	url := "https://user:hunter2-token@git.example.com/org/repo.git"

	_, err := f.cache.Open(url, git.Auth{}, git.Options{})

	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2-token")
	assert.Contains(t, err.Error(), "git.example.com", "the message still says which repository")
}

func TestCredentialsMustMatchTheURL(t *testing.T) {
	f := newFixture(t)
	key, _ := gittest.NewPrivateKey(t)
	for _, tc := range []struct {
		url  string
		auth git.Auth
		want string
	}{
		{"https://git.example.com/r.git", git.Auth{SSHPrivateKey: key}, "SSH credentials"},
		{"ssh://git@git.example.com/r.git", git.Auth{Token: "tok-123456"}, "HTTPS credentials"},
		{"ssh://git@git.example.com/r.git", git.Auth{}, "private key"},
		{"ssh://git@git.example.com/r.git", git.Auth{SSHPrivateKey: key}, "known_hosts"},
		{"ssh://git@git.example.com/r.git", git.Auth{SSHPrivateKey: []byte("not a key"), SSHKnownHosts: []byte("x")}, "cannot be read"},
		{"https://git.example.com/r.git", git.Auth{Username: "only-user"}, "both"},
	} {
		_, err := f.cache.Open(tc.url, tc.auth, git.Options{})
		assert.ErrorContains(t, err, tc.want, tc.url)
	}
}

func TestAuthFromSecret(t *testing.T) {
	key, _ := gittest.NewPrivateKey(t)
	got, err := git.AuthFromSecret(scmv1.GitAuthSSH, map[string][]byte{
		scmv1.GitSecretKeyIdentity: key, scmv1.GitSecretKeyKnownHosts: []byte("host ssh-ed25519 AAAA"),
	})
	require.NoError(t, err)
	assert.Equal(t, key, got.SSHPrivateKey)

	got, err = git.AuthFromSecret(scmv1.GitAuthToken, map[string][]byte{scmv1.GitSecretKeyToken: []byte("tok-abcdef\n")})
	require.NoError(t, err)
	assert.Equal(t, "tok-abcdef", got.Token, "a trailing newline from a file-made Secret is not part of the token")

	_, err = git.AuthFromSecret(scmv1.GitAuthBasic, map[string][]byte{scmv1.GitSecretKeyUsername: []byte("u")})
	assert.ErrorContains(t, err, scmv1.GitSecretKeyPassword)
	_, err = git.AuthFromSecret("kerberos", nil)
	assert.ErrorContains(t, err, "kerberos")
}

func TestAuthNeverPrintsItsValues(t *testing.T) {
	auth := git.Auth{Username: "u", Password: "pw-123456", Token: "tok-123456", SSHPrivateKey: []byte("-----BEGIN KEY-----"), SSHPassphrase: "phrase-123456"}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(format, auth)
		for _, secret := range []string{"pw-123456", "tok-123456", "BEGIN KEY", "phrase-123456"} {
			assert.NotContains(t, out, secret, format)
		}
	}
}
