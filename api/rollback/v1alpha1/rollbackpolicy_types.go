package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RevertAgainAnnotation on a RollbackPolicy names a bad dry SHA (the full SHA) the policy may
// revert once more, though it already did: never twice is kept otherwise, by status, even when
// the RevertCommits are deleted.
const RevertAgainAnnotation = "rollback.sluice.dev/revert-again"

// Bounds of RollbackPolicy status.
const (
	// MaxRevertedDrySHAs bounds status.environments[].revertedDrySHAs.
	MaxRevertedDrySHAs = 20
)

// RollbackPolicySpec turns on automatic rollback for environments of one PromotionStrategy.
//
// The proposal leaves "creating RevertCommits when a problem is detected" to an external tool;
// this kind is Sluice's. It has no counterpart in the proposal.
type RollbackPolicySpec struct {
	// PromotionStrategyRef names the PromotionStrategy (promoter.sluice.dev) whose environments
	// are watched.
	PromotionStrategyRef PromotionStrategyReference `json:"promotionStrategyRef"`

	// Environments lists the environment branches to watch; empty means every environment of
	// the strategy.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=200
	// +listType=set
	// +optional
	Environments []string `json:"environments,omitempty"`

	// Trigger says when an environment is rolled back.
	Trigger RollbackTriggerSpec `json:"trigger"`

	// Cooldown is the least time between two rollbacks of one environment by this policy.
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="cooldown must not be negative, for example 1h"
	// +optional
	Cooldown *metav1.Duration `json:"cooldown,omitempty"`

	// AutoMerge merges the revert's pull request at once; with false a person merges it. Default
	// true: a rollback is urgent.
	// +kubebuilder:default=true
	// +optional
	AutoMerge *bool `json:"autoMerge,omitempty"`

	// RequiredCommitStatuses are copied to the RevertCommits the policy creates: keys their
	// revert commit must pass before it merges (see RevertCommit spec.requiredCommitStatuses).
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	RequiredCommitStatuses []CommitStatusKey `json:"requiredCommitStatuses,omitempty"`

	// BypassGates is copied to the RevertCommits the policy creates: they merge while a closed
	// Gate holds the strategy, and record it.
	// +optional
	BypassGates bool `json:"bypassGates,omitempty"`

	// Suspend stops new rollbacks (RevertCommits already made go on). The annotation
	// reconcile.fluxcd.io/suspended has the same effect and carries a reason.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// RollbackTriggerSpec is the failure that starts a rollback: one of the commit-status keys in
// failure on the environment's active commit for at least FailureThreshold, starting within
// Window after the promotion merged.
type RollbackTriggerSpec struct {
	// CommitStatuses are the keys (commitstatus.sluice.dev/key) checked on the environment's
	// active hydrated commit, such as health, which the health-controller publishes.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	CommitStatuses []CommitStatusKey `json:"commitStatuses"`

	// FailureThreshold is how long a key must stay in failure before the rollback starts; a
	// check that recovers sooner starts nothing. 0 rolls back on the first failure seen.
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="failureThreshold must not be negative, for example 2m"
	// +optional
	FailureThreshold *metav1.Duration `json:"failureThreshold,omitempty"`

	// Window is how long after a promotion merged a failure that starts may roll it back. A
	// failure that starts later is left to people: the change has proven itself by then.
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="window must be positive, for example 30m"
	// +optional
	Window *metav1.Duration `json:"window,omitempty"`
}

// CommitStatusKey selects CommitStatuses by their commitstatus.sluice.dev/key label.
type CommitStatusKey struct {
	// Key is the value of the commitstatus.sluice.dev/key label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Key string `json:"key"`
}

// RollbackPolicyStatus is the observed state of a RollbackPolicy.
type RollbackPolicyStatus struct {
	// ObservedGeneration is the last metadata.generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Environments reports each watched environment.
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=branch
	// +optional
	Environments []PolicyEnvironmentStatus `json:"environments,omitempty"`

	// Conditions follow kstatus: Ready while the policy watches, Stalled when it cannot (a
	// missing strategy or environment) with what to fix.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PolicyEnvironmentStatus is what the policy saw of one environment.
type PolicyEnvironmentStatus struct {
	// Branch is the environment branch.
	Branch string `json:"branch"`
	// Failing is the failure being timed, while there is one.
	// +optional
	Failing *ObservedFailure `json:"failing,omitempty"`
	// LastRollback is the last RevertCommit this policy created for the environment.
	// +optional
	LastRollback *PolicyRollback `json:"lastRollback,omitempty"`
	// RevertedDrySHAs are the bad dry SHAs this policy already reverted here, newest first: none
	// is ever reverted twice.
	// +kubebuilder:validation:MaxItems=20
	// +listType=atomic
	// +optional
	RevertedDrySHAs []string `json:"revertedDrySHAs,omitempty"`
	// Message says what the policy waits for, or why it does not act.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// ObservedFailure is a check seen failing on an environment's active commit.
type ObservedFailure struct {
	// DrySHA is the dry commit the environment ran.
	DrySHA string `json:"drySHA"`
	// HydratedSHA is the environment commit the check failed on.
	HydratedSHA string `json:"hydratedSHA"`
	// Key is the failing commit-status key.
	Key string `json:"key"`
	// Since is when the failure was first seen, to the microsecond: the failure threshold is
	// counted from it, and a second-rounded time could cut it short.
	Since metav1.MicroTime `json:"since"`
}

// PolicyRollback is one rollback the policy started.
type PolicyRollback struct {
	// RevertCommit is the name of the RevertCommit created.
	RevertCommit string `json:"revertCommit"`
	// BadDrySHA is the dry commit it reverts.
	BadDrySHA string `json:"badDrySHA"`
	// Time is when it was created.
	Time metav1.Time `json:"time"`
}

// RollbackPolicy rolls an environment back automatically: when one of its trigger's commit-status
// keys stays in failure on the environment's active commit for the failure threshold, starting
// within the window after a promotion merged, it creates a RevertCommit to the last healthy dry
// SHA. It never reverts the same bad dry SHA twice, waits out its cooldown between rollbacks of an
// environment, and never rolls back a revert.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rbpolicy,categories=sluice
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=`.spec.promotionStrategyRef.name`
// +kubebuilder:printcolumn:name="Auto Merge",type=boolean,JSONPath=`.spec.autoMerge`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RollbackPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec RollbackPolicySpec `json:"spec"`
	// +optional
	Status RollbackPolicyStatus `json:"status,omitempty"`
}

// RollbackPolicyList is a list of RollbackPolicies.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type RollbackPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RollbackPolicy `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &RollbackPolicy{}, &RollbackPolicyList{})
}
