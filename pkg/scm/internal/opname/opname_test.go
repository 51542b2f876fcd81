package opname

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/text"
)

func TestNamesSayWhatWhereAndWhich(t *testing.T) {
	repo := scm.Repository{Owner: "acme", Name: "app"}
	got := CommitStatus("set", repo, "1a2b3c4d5e6f77777777777777777777777777777", "ci/health")
	assert.Contains(t, got, "set")
	assert.Contains(t, got, `"ci/health"`)
	assert.Contains(t, got, repo.String()+"@"+text.ShortSHA("1a2b3c4d5e6f77777777777777777777777777777"))

	got = PullRequest("merge", repo, 42)
	assert.Contains(t, got, "merge")
	assert.Contains(t, got, "#42")
	assert.Contains(t, got, repo.String())
}
