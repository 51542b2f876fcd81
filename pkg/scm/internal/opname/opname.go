// Package opname words the operations that providers name in their errors, so that an error
// reads the same whichever SCM it came from.
package opname

import (
	"fmt"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/text"
)

// CommitStatus names verb ("set", "get") of commit status name on repo at sha.
func CommitStatus(verb string, repo scm.Repository, sha, name string) string {
	return fmt.Sprintf("%s commit status %q on %s@%s", verb, name, repo, text.ShortSHA(sha))
}

// PullRequest names verb ("get", "merge", ...) of pull request number in repo. GitLab words its
// merge requests itself.
func PullRequest(verb string, repo scm.Repository, number int64) string {
	return fmt.Sprintf("%s pull request #%d in %s", verb, number, repo)
}

// CommitStatuses names reading every status of a commit in repo.
func CommitStatuses(repo scm.Repository, sha string) string {
	return fmt.Sprintf("list the commit statuses on %s@%s", repo, text.ShortSHA(sha))
}
