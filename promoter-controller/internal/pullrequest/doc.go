// Package pullrequest reconciles PullRequests (promoter.sluice.dev): it keeps each one and its
// pull request on the SCM in step, and on plain git, where the object is the pull request, it
// merges with go-git and a compare-and-swap push. A PromotionStrategy creates one per
// environment; the rollback-controller creates one per revert (from <branch>-revert-<name>).
// Neither kind is checked against the promotion rules here: the creator decided, and a revert
// is meant to move an environment backwards.
//
// One reconcile observes (git heads, or the SCM's pull request), decides what to do and what
// the status becomes (a pure function), and applies it (SCM calls, a merge and push, then the
// status write). A pull request merged or closed outside Sluice has its spec.state set to what
// happened, so spec and status agree.
package pullrequest
