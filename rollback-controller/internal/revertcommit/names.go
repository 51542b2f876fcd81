package revertcommit

import (
	"crypto/sha256"
	"encoding/hex"

	"k8s.io/apimachinery/pkg/types"

	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

// maxBranch is the longest branch name written: the PullRequest API's limit.
const maxBranch = 250

// RevertBranch is the branch a RevertCommit pushes its commit to: <env>-revert-<name>. One
// branch per RevertCommit means a revert never has to move a branch that another revert's
// pull request still uses.
func RevertBranch(env, name string) string {
	return bounded(env+"-revert-"+name, maxBranch)
}

// PullRequestName is the name of the PullRequest (promoter.sluice.dev) carrying the revert. It
// is derived from the RevertCommit alone, so a restart finds the one it made.
func PullRequestName(name string) string {
	return bounded("revert-"+name, 253)
}

// marker is the trailer line only this RevertCommit's commit carries: a revert branch whose tip
// has it was written by an earlier attempt of this object.
func marker(uid types.UID) string {
	return rollbackv1alpha1.TrailerRevertCommitUID + ": " + string(uid)
}

// bounded keeps s when it fits, else cuts it and adds a hash of the whole, so two long names
// never collide.
func bounded(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return s[:limit-11] + "-" + hex.EncodeToString(sum[:])[:10]
}
