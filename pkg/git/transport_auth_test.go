package git_test

import (
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/git/gittest"
)

// TransportAuth gives a reader without a Cache the auth method a Cache would use, with the same
// refusals of credentials that do not fit the URL.
func TestTransportAuthForAReaderWithoutACache(t *testing.T) {
	m, err := git.Auth{Token: "tok-123456"}.TransportAuth("https://git.example.com/r.git", t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, &githttp.BasicAuth{Username: git.DefaultTokenUsername, Password: "tok-123456"}, m)

	m, err = git.Auth{}.TransportAuth("https://git.example.com/r.git", t.TempDir())
	require.NoError(t, err)
	assert.Nil(t, m, "anonymous")

	key, _ := gittest.NewPrivateKey(t)
	m, err = git.Auth{SSHPrivateKey: key, SSHKnownHosts: []byte("git.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")}.
		TransportAuth("ssh://git@git.example.com/r.git", t.TempDir())
	require.NoError(t, err)
	assert.IsType(t, &gitssh.PublicKeys{}, m)

	_, err = git.Auth{SSHPrivateKey: key}.TransportAuth("https://git.example.com/r.git", t.TempDir())
	assert.ErrorContains(t, err, "SSH credentials")
	_, err = git.Auth{Token: "tok-123456"}.TransportAuth("ssh://git@git.example.com/r.git", t.TempDir())
	assert.ErrorContains(t, err, "HTTPS credentials")
	assert.NotContains(t, err.Error(), "tok-123456")
}
