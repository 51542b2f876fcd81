// Package fluxwake asks Flux to fetch a git branch at once after Sluice merged into it, instead of
// waiting for the source's interval: it finds the GitRepositories (source.toolkit.fluxcd.io)
// that track that repository and branch, and sets their reconcile.fluxcd.io/requestedAt
// annotation, as `flux reconcile source git` does. Only GitRepositories track a git branch;
// OCIRepositories and Buckets are left alone.
package fluxwake

import (
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GitRepositories are the Flux sources woken.
var GitRepositories = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}

// RequestedAtAnnotation asks a Flux object to reconcile now; its value is the time of the request.
const RequestedAtAnnotation = "reconcile.fluxcd.io/requestedAt"

// fluxDefaultBranch is what a GitRepository with no reference checks out (fluxcd/pkg/git's
// DefaultBranch).
const fluxDefaultBranch = "master"

// Source is what the matching reads of a GitRepository.
type Source struct {
	Namespace, Name string
	// Repository is the normalised spec.url (RepositoryKey).
	Repository string
	// Branch is the branch the source checks out; empty when it follows a tag, a semver range or
	// a ref that is not a branch, or is pinned to a commit with no branch named.
	Branch string
	// Pinned says spec.ref.commit holds the source on one commit (of Branch, if named), as the
	// gate-controller does for an approved revision: it deploys Branch but no longer follows it.
	Pinned bool
}

// SourceOf reads a GitRepository.
func SourceOf(u *unstructured.Unstructured) Source {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	rawURL, _, _ := unstructured.NestedString(spec, "url")
	ref, _, _ := unstructured.NestedStringMap(spec, "ref")
	return Source{Namespace: u.GetNamespace(), Name: u.GetName(), Repository: RepositoryKey(rawURL),
		Branch: checkedOutBranch(ref), Pinned: ref["commit"] != ""}
}

// checkedOutBranch is the branch a GitRepository's spec.ref checks out, with Flux's precedence:
// a commit takes precedence over every other field and is looked for on the branch, if one is
// named; a name takes precedence over branch, tag and semver, and is a branch only as
// refs/heads/<branch>; a tag or semver is not a branch.
func checkedOutBranch(ref map[string]string) string {
	switch {
	case ref["commit"] != "":
		return ref["branch"]
	case ref["name"] != "":
		branch, ok := strings.CutPrefix(ref["name"], "refs/heads/")
		if !ok {
			return ""
		}
		return branch
	case ref["semver"] != "" || ref["tag"] != "":
		return ""
	case ref["branch"] != "":
		return ref["branch"]
	}
	return fluxDefaultBranch
}

// Tracks reports whether s follows branch of the repository whose URL is repoURL.
func (s Source) Tracks(repoURL, branch string) bool {
	key := RepositoryKey(repoURL)
	return key != "" && s.Repository == key && branch != "" && s.Branch == branch && !s.Pinned
}

// RepositoryKey normalises a git URL to host and path, so that the URL Sluice pushes to and the
// one Flux fetches from compare equal when they name the same repository: the scheme, user,
// default port, letter case, a trailing .git and slashes do not count. https://Git.example.com/a/b.git,
// ssh://git@git.example.com/a/b and git@git.example.com:a/b all give git.example.com/a/b. An
// explicit port that is not the scheme's default stays: two servers on one host differ by it.
// A string that is not a git URL gives "".
func RepositoryKey(raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return ""
	}
	host, path, ok := hostAndPath(raw)
	if !ok || host == "" {
		return ""
	}
	path = strings.Trim(path, "/")
	path = strings.TrimSuffix(path, ".git")
	path = strings.TrimRight(path, "/")
	if path == "" {
		return ""
	}
	return strings.ToLower(host + "/" + path)
}

var defaultPorts = map[string]string{"http": "80", "https": "443", "ssh": "22", "git": "9418"}

// hostAndPath splits a URL (scheme://[user@]host[:port]/path) or an scp-like address
// ([user@]host:path) into host (with a port that is not the scheme's default) and path.
func hostAndPath(raw string) (host, path string, ok bool) {
	if !strings.Contains(raw, "://") {
		at := strings.LastIndex(raw, "@")
		host, path, ok = strings.Cut(raw[at+1:], ":")
		return host, path, ok && !strings.Contains(host, "/")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", false
	}
	host = u.Hostname()
	if port := u.Port(); port != "" && port != defaultPorts[u.Scheme] {
		host += ":" + port
	}
	return host, u.Path, true
}
