// Package v1alpha1 holds the gating.sluice.dev API: Gates that freeze or approve delivery.
//
// +k8s:deepcopy-gen=package
// +groupName=gating.sluice.dev
package v1alpha1
