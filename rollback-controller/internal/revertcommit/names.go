package revertcommit

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
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

// PullRequestName is the name of the PullRequest (promoter.sluice.dev) carrying a revert of
// environment env of strategy. It is also the environment's claim: one name per environment,
// which the API server creates once, so two reverts of one environment (two RollbackPolicies,
// a policy and a person, two replicas or shards) never both reach a merge. A restart finds it.
func PullRequestName(strategy, env string) string {
	return bounded("revert-"+strategy+"-"+objectName(env), 253)
}

// objectName fits a branch name into an object name: lowercase letters, digits, '-' and '.';
// a name that had to change gets a hash of the original, so two branches never share one.
func objectName(branch string) string {
	out := strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.':
			return c
		}
		return '-'
	}, branch)
	if out == branch {
		return out
	}
	sum := sha256.Sum256([]byte(branch))
	return strings.Trim(out, "-.") + "-" + hex.EncodeToString(sum[:])[:10]
}

// pullRequestName is the PullRequest of rc: the one its status records (reverts from before the
// claim named theirs after themselves), else its environment's.
func pullRequestName(rc *rollbackv1alpha1.RevertCommit) string {
	if rc.Status.PullRequest != nil && rc.Status.PullRequest.Name != "" {
		return rc.Status.PullRequest.Name
	}
	return PullRequestName(rc.Spec.PromotionStrategyRef.Name, rc.Spec.ActiveBranch)
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

// EndedAnnotation on a revert's PullRequest closed by the rollback-controller is why the revert
// ended ("<reason>: <message>"), written with the close: a pass that dies between the close and
// the status write is finished the same way by the next one.
const EndedAnnotation = "rollback.sluice.dev/ended"

// CheckedAnnotation on a revert's PullRequest is when the rollback-controller last asked the
// promoter-controller to look at it on the SCM.
const CheckedAnnotation = "rollback.sluice.dev/checked"

// pullRequestLabels are the strategy's own labels plus the RevertCommit's name. A promoter
// sharded by --watch-label-selector selects on the strategy's labels, and only merges the
// PullRequests it watches.
func pullRequestLabels(rc *rollbackv1alpha1.RevertCommit, ps *promoterv1alpha1.PromotionStrategy) map[string]string {
	out := make(map[string]string, len(ps.Labels)+1)
	maps.Copy(out, ps.Labels)
	out[rollbackv1alpha1.RevertCommitLabel] = labelValue(rc.Name)
	return out
}

// labelValue fits a name into a label value (63 characters).
func labelValue(s string) string {
	if len(s) <= 63 {
		return s
	}
	return bounded(s, 63)
}
