package git

import (
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// TransportAuth is go-git's auth method for reading url with these credentials, for a reader
// that keeps no Cache (the UI's diff reads a repository in memory, with the credentials of the
// person who asks). tmpDir is a writable folder where SSH known_hosts lines are staged while the
// method is built. Errors never carry a credential.
func (a Auth) TransportAuth(url, tmpDir string) (transport.AuthMethod, error) {
	ep, err := transport.NewEndpoint(url)
	if err != nil {
		return nil, err
	}
	return a.transportAuth(ep, tmpDir)
}
