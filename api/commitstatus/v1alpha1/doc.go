// Package v1alpha1 holds the commitstatus.sluice.dev API: CommitStatus, a statement about one
// commit that Sluice mirrors to the SCM and that promotions check.
//
// +k8s:deepcopy-gen=package
// +groupName=commitstatus.sluice.dev
package v1alpha1
