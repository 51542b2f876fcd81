// Package v1alpha1 holds the promoter.sluice.dev API: PromotionStrategies that promote hydrated
// changes through environment branches, the ProposedCommit of each environment, and the
// PullRequests that carry each promotion.
//
// +k8s:deepcopy-gen=package
// +groupName=promoter.sluice.dev
package v1alpha1
