// Package v1alpha1 holds the health.sluice.dev API: HealthCheck, the health of a set of objects
// computed from RFC-0009 CEL expressions and kstatus, optionally published as a CommitStatus.
//
// +k8s:deepcopy-gen=package
// +groupName=health.sluice.dev
package v1alpha1
