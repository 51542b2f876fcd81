// Package gitauth reads the git credentials of an ScmRepository from the data of its Secret: the
// keys each auth type needs, named in the error when missing. It links no git library, so a
// controller that only checks a Secret's shape (the commitstatus-controller) does not carry
// go-git and its crypto; pkg/git turns Credentials into a transport.
package gitauth

import (
	"fmt"
	"strings"

	scmv1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
)

// Credentials are the values of a Secret for one auth type. They never print their values:
// String and GoString hide them.
type Credentials struct {
	// Username goes with Password (basic auth) or Token.
	Username string
	Password string
	// Token is sent as the basic-auth password.
	Token string

	// SSHPrivateKey is a PEM private key; SSHPassphrase decrypts it when it is encrypted.
	SSHPrivateKey []byte
	SSHPassphrase string
	// SSHKnownHosts holds known_hosts lines for the server's host key.
	SSHKnownHosts []byte
}

// FromSecret reads credentials for an auth type (token, basic or ssh; "" means anonymous) from
// a Secret's data, with the keys documented on the ScmRepository API. Errors name the missing
// keys or the unknown type, never a value.
func FromSecret(authType scmv1.GitAuthType, data map[string][]byte) (Credentials, error) {
	get := func(key string) string { return string(data[key]) }
	require := func(keys ...string) error {
		var missing []string
		for _, k := range keys {
			if len(data[k]) == 0 {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("the Secret for %s auth lacks the key(s) %s", authType, strings.Join(missing, ", "))
		}
		return nil
	}
	switch authType {
	case "":
		return Credentials{}, nil
	case scmv1.GitAuthToken:
		if err := require(scmv1.GitSecretKeyToken); err != nil {
			return Credentials{}, err
		}
		// A Secret made from a file often ends the token with a newline, which is not part of it.
		return Credentials{Username: get(scmv1.GitSecretKeyUsername), Token: strings.TrimSpace(get(scmv1.GitSecretKeyToken))}, nil
	case scmv1.GitAuthBasic:
		if err := require(scmv1.GitSecretKeyUsername, scmv1.GitSecretKeyPassword); err != nil {
			return Credentials{}, err
		}
		return Credentials{Username: get(scmv1.GitSecretKeyUsername), Password: get(scmv1.GitSecretKeyPassword)}, nil
	case scmv1.GitAuthSSH:
		if err := require(scmv1.GitSecretKeyIdentity, scmv1.GitSecretKeyKnownHosts); err != nil {
			return Credentials{}, err
		}
		return Credentials{
			SSHPrivateKey: data[scmv1.GitSecretKeyIdentity],
			SSHPassphrase: get(scmv1.GitSecretKeyPassphrase),
			SSHKnownHosts: data[scmv1.GitSecretKeyKnownHosts],
		}, nil
	}
	return Credentials{}, fmt.Errorf("unknown git auth type %q: use token, basic or ssh", authType)
}

// String describes the kind of credentials without their values.
func (c Credentials) String() string { return "gitauth.Credentials" + c.Redacted() }

// GoString keeps %#v from printing the fields.
func (c Credentials) GoString() string { return c.String() }

// Redacted names the kind of credentials, such as "{token, [redacted]}", without their values.
func (c Credentials) Redacted() string {
	switch {
	case len(c.SSHPrivateKey) > 0:
		return "{ssh key, [redacted]}"
	case c.Token != "":
		return "{token, [redacted]}"
	case c.Password != "":
		return "{basic, [redacted]}"
	}
	return "{anonymous}"
}
