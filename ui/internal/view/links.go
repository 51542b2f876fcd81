package view

import (
	"net/url"
	"strings"

	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
)

// Links makes SCM web addresses for one repository. The zero value makes none: a repository
// that is missing, or served over plain git, has no page to link to.
type Links struct {
	base      string
	commitSeg string
}

// LinksFor reads the web address of repo, hosted by a provider of type providerType. An ssh or
// git URL becomes its https page: git@host:owner/name.git and ssh://git@host/owner/name.git both
// give https://host/owner/name.
func LinksFor(repo *scmv1alpha1.ScmRepository, providerType scmv1alpha1.ScmProviderType) Links {
	if repo == nil || providerType == scmv1alpha1.ScmProviderGit {
		return Links{}
	}
	base := webBase(repo.Spec.URL)
	if base == "" {
		return Links{}
	}
	seg := "/commit/"
	if providerType == scmv1alpha1.ScmProviderGitLab {
		seg = "/-/commit/"
	}
	return Links{base: base, commitSeg: seg}
}

func webBase(raw string) string {
	raw = strings.TrimSuffix(strings.TrimSuffix(raw, "/"), ".git")
	if host, path, ok := strings.Cut(strings.TrimPrefix(raw, "git@"), ":"); ok && strings.HasPrefix(raw, "git@") && !strings.Contains(host, "/") {
		return "https://" + host + "/" + strings.TrimPrefix(path, "/")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	scheme := u.Scheme
	if scheme != "http" {
		scheme = "https"
	}
	return scheme + "://" + u.Hostname() + portOf(u) + u.Path
}

// portOf keeps an http port (a local Gitea); an ssh port means nothing to the web server.
func portOf(u *url.URL) string {
	if u.Scheme == "http" || u.Scheme == "https" {
		if p := u.Port(); p != "" {
			return ":" + p
		}
	}
	return ""
}

// Commit is the web page of sha, or "" when there is none.
func (l Links) Commit(sha string) string {
	if l.base == "" || sha == "" {
		return ""
	}
	return l.base + l.commitSeg + sha
}
