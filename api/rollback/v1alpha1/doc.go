// Package v1alpha1 holds the rollback.sluice.dev API: RevertCommits that restore an environment
// branch to the hydrated manifests of an earlier, healthy dry commit through a pull request, the
// RollbackPolicies that create them when an environment's checks fail after a promotion, and the
// RFC-0002 manifest releases with numbered snapshots.
//
// +k8s:deepcopy-gen=package
// +groupName=rollback.sluice.dev
package v1alpha1
