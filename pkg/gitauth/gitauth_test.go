package gitauth

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	scmv1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
)

func TestFromSecret(t *testing.T) {
	key := []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nxyz")
	got, err := FromSecret(scmv1.GitAuthSSH, map[string][]byte{
		scmv1.GitSecretKeyIdentity: key, scmv1.GitSecretKeyKnownHosts: []byte("host ssh-ed25519 AAAA"),
	})
	require.NoError(t, err)
	assert.Equal(t, key, got.SSHPrivateKey)

	got, err = FromSecret(scmv1.GitAuthToken, map[string][]byte{scmv1.GitSecretKeyToken: []byte("tok-abcdef\n")})
	require.NoError(t, err)
	assert.Equal(t, "tok-abcdef", got.Token, "a trailing newline from a file-made Secret is not part of the token")

	_, err = FromSecret(scmv1.GitAuthBasic, map[string][]byte{scmv1.GitSecretKeyUsername: []byte("u")})
	assert.EqualError(t, err, "the Secret for basic auth lacks the key(s) password")
	_, err = FromSecret(scmv1.GitAuthSSH, nil)
	assert.EqualError(t, err, "the Secret for ssh auth lacks the key(s) identity, known_hosts")
	_, err = FromSecret("kerberos", nil)
	assert.ErrorContains(t, err, "kerberos")

	got, err = FromSecret("", map[string][]byte{scmv1.GitSecretKeyToken: []byte("ignored")})
	require.NoError(t, err)
	assert.Equal(t, Credentials{}, got, "anonymous")
}

func TestCredentialsNeverPrintTheirValues(t *testing.T) {
	c := Credentials{Username: "u", Password: "pw-123456", Token: "tok-123456", SSHPrivateKey: []byte("-----BEGIN KEY-----"), SSHPassphrase: "phrase-123456"}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(format, c)
		for _, secret := range []string{"pw-123456", "tok-123456", "BEGIN KEY", "phrase-123456"} {
			assert.NotContains(t, out, secret, format)
		}
	}
}
