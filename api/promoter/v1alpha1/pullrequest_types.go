package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PullRequestState is open, merged or closed.
//
// +kubebuilder:validation:Enum=open;merged;closed
type PullRequestState string

const (
	// PullRequestOpen: the pull request exists and waits.
	PullRequestOpen PullRequestState = "open"
	// PullRequestMerged: merge it (spec), or it was merged (status).
	PullRequestMerged PullRequestState = "merged"
	// PullRequestClosed: close it unmerged (spec), or it was closed (status).
	PullRequestClosed PullRequestState = "closed"
)

// PullRequestSpec is the desired state of a pull request.
//
// +kubebuilder:validation:XValidation:rule="self.state != 'merged' || (has(self.expectedHeadSHA) && size(self.expectedHeadSHA) > 0)",message="expectedHeadSHA is required to merge: the merge happens only if the source branch is still at that commit",fieldPath=".expectedHeadSHA"
type PullRequestSpec struct {
	// RepositoryRef names the ScmRepository.
	RepositoryRef LocalReference `json:"repositoryRef"`
	// Title of the pull request.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Title string `json:"title"`
	// Description is the body of the pull request.
	// +kubebuilder:validation:MaxLength=65536
	// +optional
	Description string `json:"description,omitempty"`
	// SourceBranch is the branch with the change (the head), e.g. dev-next. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="sourceBranch is immutable; create another PullRequest"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=250
	SourceBranch string `json:"sourceBranch"`
	// TargetBranch is the branch to merge into (the base), e.g. dev. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="targetBranch is immutable; create another PullRequest"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=250
	TargetBranch string `json:"targetBranch"`
	// ExpectedHeadSHA is the source commit that was checked. The merge happens only while the
	// source branch is still at it, so an unchecked commit is never merged.
	// +kubebuilder:validation:Pattern=`^([0-9a-f]{40}|[0-9a-f]{64})$`
	// +optional
	ExpectedHeadSHA string `json:"expectedHeadSHA,omitempty"`
	// ExpectedBaseSHA, when set, is the target commit the change was made on. The merge happens
	// only while the target branch is still at it: a target that moved (a fix pushed meanwhile)
	// leaves the pull request open, with a BaseMoved condition, and nothing merged. On plain git
	// the push itself is the guard; on an SCM the target is checked right before and right after
	// the merge call, and Gitea is asked for a fast-forward-only merge, which refuses a moved
	// target itself (see docs/architecture.md for what GitHub and GitLab can guard).
	// +kubebuilder:validation:Pattern=`^([0-9a-f]{40}|[0-9a-f]{64})$`
	// +optional
	ExpectedBaseSHA string `json:"expectedBaseSHA,omitempty"`
	// State is what should happen: open (keep it open), merged (merge it), closed (close it).
	// Once the pull request is merged or closed outside Sluice, the controller sets it to what
	// happened, so spec and status agree.
	// +kubebuilder:default=open
	// +optional
	State PullRequestState `json:"state,omitempty"`
}

// PullRequestStatus is the observed state of a pull request.
type PullRequestStatus struct {
	// ObservedGeneration is the last metadata.generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ID is the SCM's number of the pull request; empty for plain git, where this object is the
	// pull request.
	// +optional
	ID string `json:"id,omitempty"`
	// URL of the pull request on the SCM.
	// +optional
	URL string `json:"url,omitempty"`
	// State is open, merged or closed.
	// +optional
	State PullRequestState `json:"state,omitempty"`
	// HeadSHA is the source commit last seen.
	// +optional
	HeadSHA string `json:"headSHA,omitempty"`
	// MergedHeadSHA is the source commit that was merged.
	// +optional
	MergedHeadSHA string `json:"mergedHeadSHA,omitempty"`
	// MergeSHA is the target commit after the merge.
	// +optional
	MergeSHA string `json:"mergeSHA,omitempty"`
	// MergedExternally is true when the pull request was merged outside Sluice.
	// +optional
	MergedExternally bool `json:"mergedExternally,omitempty"`
	// ClosedExternally is true when the pull request was closed outside Sluice.
	// +optional
	ClosedExternally bool `json:"closedExternally,omitempty"`
	// MergeTime is when the merge was made or observed.
	// +optional
	MergeTime *metav1.Time `json:"mergeTime,omitempty"`
	// Conditions follow kstatus.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PullRequest is a pull request from a source branch to a target branch. On an SCM with pull
// requests (GitHub, GitLab, Gitea) it mirrors one there; on plain git it is the pull request, and
// the controller merges it with go-git. A PromotionStrategy creates one per environment, named
// <strategy>-<environment>, so a restart finds it instead of opening another.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=spr,categories=sluice
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.sourceBranch`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetBranch`
// +kubebuilder:printcolumn:name="Desired",type=string,JSONPath=`.spec.state`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PullRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PullRequestSpec `json:"spec"`
	// +optional
	Status PullRequestStatus `json:"status,omitempty"`
}

// PullRequestList is a list of PullRequests.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type PullRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PullRequest `json:"items"`
}
