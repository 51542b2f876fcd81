package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProposedCommitSpec is what a PromotionStrategy proposes for one environment. The strategy
// writes it; edit the strategy instead.
type ProposedCommitSpec struct {
	// RepositoryRef names the ScmRepository.
	RepositoryRef LocalReference `json:"repositoryRef"`
	// ProposedBranch carries the proposed hydrated commit, e.g. dev-next.
	ProposedBranch string `json:"proposedBranch"`
	// ActiveBranch is the environment branch, e.g. dev.
	ActiveBranch string `json:"activeBranch"`
	// ProposedCommitStatuses are checked on the proposed commit.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	ProposedCommitStatuses []CommitStatusSelector `json:"proposedCommitStatuses,omitempty"`
	// ActiveCommitStatuses are checked on the active commit.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	ActiveCommitStatuses []CommitStatusSelector `json:"activeCommitStatuses,omitempty"`
}

// ProposedCommitStatus is the observed state of a ProposedCommit.
type ProposedCommitStatus struct {
	// ObservedGeneration is the last metadata.generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Proposed is the tip of the proposed branch and its checks.
	// +optional
	Proposed CommitState `json:"proposed,omitempty"`
	// Active is the tip of the environment branch and its checks.
	// +optional
	Active CommitState `json:"active,omitempty"`
	// Conditions follow kstatus: Ready when nothing is left to promote.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ProposedCommit is one environment's proposed change, as its PromotionStrategy sees it: the
// proposed and active commits and the status of each check. It is owned by the strategy and
// named <strategy>-<environment>.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pcommit,categories=sluice
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.spec.activeBranch`
// +kubebuilder:printcolumn:name="Proposed Dry",type=string,JSONPath=`.status.proposed.drySHA`
// +kubebuilder:printcolumn:name="Active Dry",type=string,JSONPath=`.status.active.drySHA`
// +kubebuilder:printcolumn:name="Checks",type=string,JSONPath=`.status.proposed.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ProposedCommit struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ProposedCommitSpec `json:"spec"`
	// +optional
	Status ProposedCommitStatus `json:"status,omitempty"`
}

// ProposedCommitList is a list of ProposedCommits.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type ProposedCommitList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProposedCommit `json:"items"`
}
