// Package promotionstrategy reconciles PromotionStrategies: it promotes each environment's
// proposed hydrated commit (<branch>-next) into the environment branch, through a PullRequest,
// once the rules of pkg/promotion allow.
//
// One reconcile has three steps, as gate-controller/internal/hold does:
//
//   - observe reads git (one fetch of the dry, environment and proposed branches), the
//     environments' PullRequests (a live read, so a PullRequest is never created twice),
//     ProposedCommits, CommitStatuses, Gates and RevertCommits into an observation;
//   - decide is a pure function of that observation: the new status, the PullRequest and
//     ProposedCommit each environment should have, and what to announce;
//   - apply writes the PullRequests and ProposedCommits, then the status.
//
// Events and metrics of a merge or a block are made only once the status write that records
// them succeeded. The write carries the resourceVersion of the copy the reconcile started
// from, so a reconcile that started from a stale cached copy conflicts and announces nothing;
// the reconcile after it finds the record already there.
package promotionstrategy
