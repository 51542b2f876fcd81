package plaingit_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/plaingit"
)

func TestEverySCMCallIsUnsupportedAndSaysWhereItIsHandled(t *testing.T) {
	p, err := scm.New(plaingit.Name, scm.Config{})
	require.NoError(t, err)
	assert.Equal(t, scm.Capabilities{}, p.Capabilities())

	c := context.Background()
	repo := scm.Repository{Owner: "acme", Name: "app"}
	sha := strings.Repeat("a", 40)
	calls := map[string]func() error{
		"set status":  func() error { _, err := p.SetCommitStatus(c, repo, scm.CommitStatus{SHA: sha}); return err },
		"get status":  func() error { _, err := p.GetCommitStatus(c, repo, sha, "ci"); return err },
		"create pr":   func() error { _, err := p.CreatePullRequest(c, repo, scm.NewPullRequest{}); return err },
		"update pr":   func() error { _, err := p.UpdatePullRequest(c, repo, 1, "t", "b"); return err },
		"find pr":     func() error { _, err := p.FindOpenPullRequest(c, repo, "a", "b"); return err },
		"get pr":      func() error { _, err := p.GetPullRequest(c, repo, 1); return err },
		"merge pr":    func() error { _, err := p.MergePullRequest(c, repo, 1, scm.MergeOptions{}); return err },
		"close pr":    func() error { return p.ClosePullRequest(c, repo, 1) },
		"verify hook": func() error { return p.VerifyWebhook(http.Header{}, nil) },
		"parse hook":  func() error { _, err := p.ParseWebhook(http.Header{}, nil); return err },
	}
	for name, call := range calls {
		err := call()
		assert.True(t, scm.IsUnsupported(err), name)
		assert.True(t, scm.IsPermanent(err), name)
		assert.Contains(t, err.Error(), "not supported by plain git; handled in-cluster", name)
	}
}
