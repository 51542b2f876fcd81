package scmrepository

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/sluicehq/sluice/pkg/scm"
)

// scpLikeURL is git's user@host:path form, as the ScmRepository API accepts it.
var scpLikeURL = regexp.MustCompile(`^[A-Za-z0-9._~-]+@[A-Za-z0-9.-]+:[A-Za-z0-9._~/-]+$`)

// checkRepositoryURL applies the ScmRepository API's url rules again, for objects stored before a
// rule existed: https://, ssh:// or user@host:path; http:// only to a loopback host with
// allowInsecureLoopbackHTTP; no password, and no user name over http(s). It reports whether git
// reaches the URL over ssh. Messages never repeat a password.
func checkRepositoryURL(raw string, allowLoopbackHTTP bool) (ssh bool, err error) {
	if scpLikeURL.MatchString(raw) {
		return true, nil
	}
	u, perr := url.Parse(raw)
	if perr != nil || u.Host == "" {
		return false, errors.New("url is not https://host/owner/name.git, ssh://git@host/owner/name.git or git@host:owner/name.git: fix spec.url")
	}
	shown := scm.RedactURL(u)
	if _, hasPassword := u.User.Password(); hasPassword {
		return false, fmt.Errorf("url %s carries a password: remove it and put the credentials in the Secret named by spec.auth.secretRef", shown)
	}
	switch strings.ToLower(u.Scheme) {
	case "ssh":
		return true, nil
	case "https", "http":
		if u.User != nil {
			return false, fmt.Errorf("url %s carries a user name: remove it and put the credentials in the Secret named by spec.auth.secretRef", shown)
		}
		if u.Scheme == "http" && !(allowLoopbackHTTP && scm.IsLoopbackHost(u.Hostname())) {
			return false, fmt.Errorf("url %s uses http: use https (http is accepted only for a loopback host with allowInsecureLoopbackHTTP: true)", shown)
		}
		return false, nil
	}
	return false, fmt.Errorf("url %s has scheme %q: use https://, ssh:// or user@host:path", shown, u.Scheme)
}
