package git

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/skeema/knownhosts"
	"golang.org/x/crypto/ssh"

	scmv1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/gitauth"
)

// DefaultTokenUsername is the user name sent with a token when none is given. GitHub needs it
// for App installation tokens and accepts it for personal tokens; GitLab and Gitea accept any
// non-empty name with a token.
const DefaultTokenUsername = "x-access-token"

// Auth is the credentials of one repository, as the caller read them from a Secret. Set the
// HTTPS fields (Token, or Username and Password) or the SSH ones, to match the URL. Auth never
// prints its values: String and GoString hide them.
type Auth struct {
	// Username is the HTTPS user name (with Password, or with Token; see DefaultTokenUsername).
	Username string
	// Password is the HTTPS basic-auth password.
	Password string
	// Token is an access token, sent as the basic-auth password.
	Token string

	// SSHPrivateKey is a PEM private key (OpenSSH, PKCS#1, PKCS#8 or EC).
	SSHPrivateKey []byte
	// SSHPassphrase decrypts SSHPrivateKey when it is encrypted.
	SSHPassphrase string
	// SSHKnownHosts holds known_hosts lines; the server's host key must match one of them.
	SSHKnownHosts []byte
	// InsecureIgnoreHostKey accepts any SSH host key. It exists for throwaway test servers only:
	// without host key checking anyone on the path can read and rewrite the repository.
	InsecureIgnoreHostKey bool

	// CABundle holds PEM certificates trusted for HTTPS, besides the system ones.
	CABundle []byte
}

// AuthFromSecret reads credentials from the data of a Secret, for a ScmRepository auth type
// (token, basic or ssh; "" means anonymous), with the keys documented on the ScmRepository API.
// The keys are checked by pkg/gitauth, which a controller that checks only a Secret's shape
// uses without linking this package.
func AuthFromSecret(authType scmv1.GitAuthType, data map[string][]byte) (Auth, error) {
	c, err := gitauth.FromSecret(authType, data)
	if err != nil {
		return Auth{}, err
	}
	return Auth{
		Username: c.Username, Password: c.Password, Token: c.Token,
		SSHPrivateKey: c.SSHPrivateKey, SSHPassphrase: c.SSHPassphrase, SSHKnownHosts: c.SSHKnownHosts,
	}, nil
}

func (a Auth) credentials() gitauth.Credentials {
	return gitauth.Credentials{
		Username: a.Username, Password: a.Password, Token: a.Token,
		SSHPrivateKey: a.SSHPrivateKey, SSHPassphrase: a.SSHPassphrase, SSHKnownHosts: a.SSHKnownHosts,
	}
}

// String describes the kind of credentials without their values.
func (a Auth) String() string { return "git.Auth" + a.credentials().Redacted() }

// GoString keeps %#v from printing the fields.
func (a Auth) GoString() string { return a.String() }

// secrets lists the values that must never appear in a message.
func (a Auth) secrets() []string {
	return []string{a.Password, a.Token, a.SSHPassphrase, string(a.SSHPrivateKey)}
}

// transportAuth turns the credentials into go-git's auth method for the endpoint. tmpDir is a
// writable folder for staging known_hosts.
func (a Auth) transportAuth(ep *transport.Endpoint, tmpDir string) (transport.AuthMethod, error) {
	hasHTTP := a.Token != "" || a.Password != "" || a.Username != ""
	hasSSH := len(a.SSHPrivateKey) > 0
	switch ep.Protocol {
	case "http", "https":
		if hasSSH {
			return nil, errors.New("SSH credentials were given for an HTTP(S) URL: use a token or basic auth, or an ssh:// URL")
		}
		switch {
		case a.Token != "":
			user := a.Username
			if user == "" {
				user = DefaultTokenUsername
			}
			return &githttp.BasicAuth{Username: user, Password: a.Token}, nil
		case a.Password != "" || a.Username != "":
			if a.Username == "" || a.Password == "" {
				return nil, errors.New("basic auth needs both a user name and a password")
			}
			return &githttp.BasicAuth{Username: a.Username, Password: a.Password}, nil
		}
		return nil, nil
	case "ssh":
		if hasHTTP {
			return nil, errors.New("HTTPS credentials were given for an SSH URL: use an SSH key, or an https:// URL")
		}
		if !hasSSH {
			return nil, errors.New("an SSH URL needs an SSH private key (Secret key identity) and known_hosts")
		}
		return a.sshAuth(ep, tmpDir)
	}
	if hasHTTP || hasSSH {
		return nil, fmt.Errorf("credentials cannot be used with a %s URL", ep.Protocol)
	}
	return nil, nil
}

func (a Auth) sshAuth(ep *transport.Endpoint, tmpDir string) (transport.AuthMethod, error) {
	user := ep.User
	if user == "" {
		user = gitssh.DefaultUsername
	}
	keys, err := gitssh.NewPublicKeys(user, a.SSHPrivateKey, a.SSHPassphrase)
	if err != nil {
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			return nil, errors.New("the SSH private key is encrypted and no passphrase was given")
		}
		// The parser's messages describe the format, never the key bytes.
		return nil, fmt.Errorf("the SSH private key cannot be read (wrong passphrase, or not a PEM private key): %s", redactText(err.Error(), a.secrets()))
	}
	if a.InsecureIgnoreHostKey {
		keys.HostKeyCallback = ssh.InsecureIgnoreHostKey() //nolint:gosec // opt-in, for throwaway test servers
		return keys, nil
	}
	if len(strings.TrimSpace(string(a.SSHKnownHosts))) == 0 {
		return nil, errors.New("SSH host key checking needs known_hosts lines for the server (Secret key known_hosts)")
	}
	port := ep.Port
	if port == 0 {
		port = 22
	}
	hostPort := net.JoinHostPort(ep.Host, strconv.Itoa(port))
	cb, algos, err := knownHostsCallback(a.SSHKnownHosts, hostPort, tmpDir)
	if err != nil {
		return nil, err
	}
	keys.HostKeyCallback = cb
	keys.HostKeyAlgorithms = algos
	return keys, nil
}

// knownHostsCallback checks host keys against the known_hosts lines. It also returns the key
// algorithms known_hosts has for the host, so the server is asked for a key that can match
// rather than for its preferred type.
func knownHostsCallback(lines []byte, hostPort, tmpDir string) (ssh.HostKeyCallback, []string, error) {
	// The known_hosts readers take files only. The lines are public keys, not secrets; they are
	// staged in the cache folder, which is writable even where the root filesystem is not.
	f, err := os.CreateTemp(tmpDir, ".known-hosts-*")
	if err != nil {
		return nil, nil, fmt.Errorf("stage known_hosts: %w", err)
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(lines)
	cerr := f.Close()
	if werr != nil || cerr != nil {
		return nil, nil, fmt.Errorf("stage known_hosts: %w", errors.Join(werr, cerr))
	}
	db, err := knownhosts.NewDB(f.Name())
	if err != nil {
		return nil, nil, fmt.Errorf("known_hosts is not valid: %s", strings.ReplaceAll(err.Error(), f.Name(), "known_hosts"))
	}
	check := db.HostKeyCallback()
	cb := func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := check(hostname, remote, key)
		switch {
		case err == nil:
			return nil
		case knownhosts.IsHostUnknown(err):
			return &HostKeyError{Host: hostname, KeyType: key.Type(), Fingerprint: ssh.FingerprintSHA256(key), kind: ErrUnknownHostKey}
		case knownhosts.IsHostKeyChanged(err):
			return &HostKeyError{Host: hostname, KeyType: key.Type(), Fingerprint: ssh.FingerprintSHA256(key), kind: ErrHostKeyMismatch}
		}
		return err
	}
	return cb, db.HostKeyAlgorithms(hostPort), nil
}

// HostKeyError is a refused SSH host key: unknown to known_hosts, or different from it.
type HostKeyError struct {
	Host        string
	KeyType     string
	Fingerprint string
	kind        error
}

func (e *HostKeyError) Error() string {
	if e.kind == ErrUnknownHostKey {
		return fmt.Sprintf("the SSH host key of %s (%s %s) is not in known_hosts: add the server's key, checked out of band, to the known_hosts of the credentials",
			e.Host, e.KeyType, e.Fingerprint)
	}
	return fmt.Sprintf("the SSH host key of %s (%s %s) does not match known_hosts: the server's key changed, or something is intercepting the connection",
		e.Host, e.KeyType, e.Fingerprint)
}

// Is matches ErrUnknownHostKey or ErrHostKeyMismatch.
func (e *HostKeyError) Is(target error) bool { return target == e.kind }
