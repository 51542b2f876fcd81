package fluxwake

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRepositoryKeyComparesTheRepositoryNotHowItIsReached(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"https://git.example.com/team/app.git", "git.example.com/team/app"},
		{"https://Git.Example.com/Team/App/", "git.example.com/team/app"},
		{"https://git.example.com:443/team/app.git/", "git.example.com/team/app"},
		{"http://git.example.com/team/app", "git.example.com/team/app"},
		{"ssh://git@git.example.com/team/app.git", "git.example.com/team/app"},
		{"ssh://git@git.example.com:22/team/app", "git.example.com/team/app"},
		{"git@git.example.com:team/app.git", "git.example.com/team/app"},
		{"http://127.0.0.1:3000/team/app.git", "127.0.0.1:3000/team/app"},
		{"ssh://git@git.example.com:2222/team/app", "git.example.com:2222/team/app"},
		{"https://git.example.com/", ""},
		{"", ""},
		{"not a url", ""},
		{"/srv/git/app.git", ""},
		{"https://%zz/app", ""},
	} {
		assert.Equal(t, tc.want, RepositoryKey(tc.url), tc.url)
	}
}

func gitRepository(url string, ref map[string]any) *unstructured.Unstructured {
	spec := map[string]any{"url": url, "interval": "1m"}
	if ref != nil {
		spec["ref"] = ref
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion("source.toolkit.fluxcd.io/v1")
	u.SetKind("GitRepository")
	u.SetNamespace("flux-system")
	u.SetName("env")
	return u
}

func TestTracksTheBranchFluxChecksOut(t *testing.T) {
	const repo = "https://git.example.com/team/app.git"
	for _, tc := range []struct {
		name       string
		url        string
		ref        map[string]any
		repo, head string
		want       bool
	}{
		{"branch", repo, map[string]any{"branch": "prod"}, repo, "prod", true},
		{"another branch", repo, map[string]any{"branch": "staging"}, repo, "prod", false},
		{"another repository", "https://git.example.com/team/other", map[string]any{"branch": "prod"}, repo, "prod", false},
		{"the same repository over ssh", "ssh://git@git.example.com/team/app", map[string]any{"branch": "prod"}, repo, "prod", true},
		{"a branch by its ref name", repo, map[string]any{"name": "refs/heads/prod"}, repo, "prod", true},
		{"a ref name wins over the branch", repo, map[string]any{"name": "refs/heads/dev", "branch": "prod"}, repo, "prod", false},
		{"a tag ref name", repo, map[string]any{"name": "refs/tags/prod"}, repo, "prod", false},
		{"a pull request ref", repo, map[string]any{"name": "refs/pull/1/head"}, repo, "prod", false},
		{"pinned to a commit on the branch", repo, map[string]any{"branch": "prod", "commit": "3549486a9f2b55c5b7a3d5b1f2e8c7d6a5b4c3d2"}, repo, "prod", false},
		{"a tag wins over the branch", repo, map[string]any{"branch": "prod", "tag": "v1"}, repo, "prod", false},
		{"a semver range wins over the branch", repo, map[string]any{"branch": "prod", "semver": ">=1.0.0"}, repo, "prod", false},
		{"no ref follows master", repo, nil, repo, "master", true},
		{"an empty ref follows master", repo, map[string]any{}, repo, "main", false},
		{"an empty branch merged into", repo, map[string]any{"branch": "prod"}, repo, "", false},
		{"an unreadable repository", "", map[string]any{"branch": "prod"}, "", "prod", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, SourceOf(gitRepository(tc.url, tc.ref)).Tracks(tc.repo, tc.head))
		})
	}
}

// A source pinned on a commit deploys the branch it names, and follows none.
func TestAPinnedSourceDeploysItsBranchWithoutFollowingIt(t *testing.T) {
	const repo = "https://git.example.com/team/app.git"
	const sha = "3549486a9f2b55c5b7a3d5b1f2e8c7d6a5b4c3d2"
	for _, tc := range []struct {
		name   string
		ref    map[string]any
		branch string
		pinned bool
	}{
		{"a branch", map[string]any{"branch": "prod"}, "prod", false},
		{"a commit of a branch", map[string]any{"branch": "prod", "commit": sha}, "prod", true},
		{"a commit of no branch named", map[string]any{"commit": sha}, "", true},
		{"a commit wins over a ref name", map[string]any{"name": "refs/heads/dev", "commit": sha}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := SourceOf(gitRepository(repo, tc.ref))
			assert.Equal(t, tc.branch, s.Branch)
			assert.Equal(t, tc.pinned, s.Pinned)
		})
	}
}
