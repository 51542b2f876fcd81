package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels, annotations and git trailers of reverts.
const (
	// PolicyLabel names the RollbackPolicy on the RevertCommits it creates.
	PolicyLabel = "rollback.sluice.dev/policy"
	// RevertCommitLabel names the RevertCommit on the PullRequest (promoter.sluice.dev) that
	// carries its revert.
	RevertCommitLabel = "rollback.sluice.dev/revertcommit"
	// LiftHoldAnnotation on a merged RevertCommit lets the promoter-controller promote its bad
	// dry SHA (and older ones) into the environment again; its value is the reason, for people.
	// Deleting the RevertCommit has the same effect.
	LiftHoldAnnotation = "rollback.sluice.dev/lift-hold"

	// TrailerRevertedDrySHA names the bad dry SHA in the revert commit's message.
	TrailerRevertedDrySHA = "Sluice-Reverted-Dry-SHA"
	// TrailerRestoredDrySHA names the target dry SHA in the revert commit's message.
	TrailerRestoredDrySHA = "Sluice-Restored-Dry-SHA"
	// TrailerRevertCommit names the RevertCommit (namespace/name) in the revert commit's message.
	TrailerRevertCommit = "Sluice-Revert-Commit"
	// TrailerRevertCommitUID carries the RevertCommit's uid, so a restart recognises its own
	// commit on the revert branch and never writes a second one.
	TrailerRevertCommitUID = "Sluice-Revert-Commit-Uid"
)

// RevertPhase is where a revert stands.
//
// +kubebuilder:validation:Enum=Pending;Open;Merged;Failed;Superseded
type RevertPhase string

const (
	// RevertPending: the revert commit or its pull request is not there yet (or the input is
	// wrong: see the Stalled condition).
	RevertPending RevertPhase = "Pending"
	// RevertOpen: the pull request is open; with autoMerge false it waits for a person.
	RevertOpen RevertPhase = "Open"
	// RevertMerged: the environment branch holds the revert. Final.
	RevertMerged RevertPhase = "Merged"
	// RevertFailed: the revert cannot happen any more (its pull request was closed unmerged, or
	// the environment left the bad dry SHA before the revert was made). Final: create another
	// RevertCommit to try again.
	RevertFailed RevertPhase = "Failed"
	// RevertSuperseded: the environment moved on to a newer dry commit (a fix forward) before
	// the revert merged, or another revert of the environment holds its claim; nothing was
	// merged, and the Ready condition names what superseded it. Final, and holds nothing.
	RevertSuperseded RevertPhase = "Superseded"
)

// PromotionStrategyReference names a PromotionStrategy (promoter.sluice.dev) in the same namespace.
type PromotionStrategyReference struct {
	// Name of the PromotionStrategy.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// RevertCommitSpec asks for one environment branch to be restored to the hydrated manifests of
// an earlier dry commit.
//
// Deviations from the proposal's RevertCommit (gitops-promotion-rollback-proposal.md), whose
// spec is repoRef, drySHA and activeBranch:
//   - promotionStrategyRef replaces repoRef: the repository is the strategy's, and the strategy's
//     status.environments[].lastHealthyDrySHAs gives the default target;
//   - drySHA may be left empty: the newest last-healthy dry SHA that differs from the active one;
//   - badDrySHA, reason, autoMerge and trigger are additions;
//   - the group is rollback.sluice.dev (not promoter), and the spec is immutable except autoMerge and suspend:
//     a revert is one action; create another RevertCommit for another.
//
// +kubebuilder:validation:XValidation:rule="self.promotionStrategyRef == oldSelf.promotionStrategyRef && self.activeBranch == oldSelf.activeBranch",message="promotionStrategyRef and activeBranch are immutable; create another RevertCommit"
// +kubebuilder:validation:XValidation:rule="has(self.drySHA) == has(oldSelf.drySHA) && (!has(self.drySHA) || self.drySHA == oldSelf.drySHA) && has(self.badDrySHA) == has(oldSelf.badDrySHA) && (!has(self.badDrySHA) || self.badDrySHA == oldSelf.badDrySHA)",message="drySHA and badDrySHA are immutable; create another RevertCommit"
type RevertCommitSpec struct {
	// PromotionStrategyRef names the PromotionStrategy whose environment is reverted. Its
	// repository is the one written to.
	PromotionStrategyRef PromotionStrategyReference `json:"promotionStrategyRef"`

	// ActiveBranch is the environment branch to revert, one of the strategy's environments.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	ActiveBranch string `json:"activeBranch"`

	// DrySHA is the dry commit to go back to: the environment gets back the hydrated commit it
	// ran for it. It must appear in the first-parent history of the environment branch. Empty
	// means the newest entry of the environment's lastHealthyDrySHAs (in the strategy's status)
	// that differs from the dry SHA it runs now.
	// +kubebuilder:validation:Pattern=`^([0-9a-f]{40}|[0-9a-f]{64})$`
	// +optional
	DrySHA string `json:"drySHA,omitempty"`

	// BadDrySHA, when set, is the dry commit being reverted: the revert is made only while the
	// environment still runs it, so a fix forward that landed meanwhile is never undone. A
	// RollbackPolicy always sets it. Empty means whatever the environment runs when the revert
	// commit is written.
	// +kubebuilder:validation:Pattern=`^([0-9a-f]{40}|[0-9a-f]{64})$`
	// +optional
	BadDrySHA string `json:"badDrySHA,omitempty"`

	// Reason is why, for people: it goes into the revert commit, the pull request and Events.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Reason string `json:"reason,omitempty"`

	// AutoMerge merges the revert's pull request at once. With false it waits for a person to
	// merge it, on the SCM or (plain git) by setting the PullRequest's spec.state to merged.
	// Empty means the environment's own autoMerge in the PromotionStrategy, so a revert waits
	// wherever a promotion would. It may be changed while the pull request is open.
	// +optional
	AutoMerge *bool `json:"autoMerge,omitempty"`

	// RequiredCommitStatuses are commit-status keys (the commitstatus.sluice.dev/key label) the
	// revert commit must pass (phase success, on the ScmRepository of the strategy) before it is
	// merged; name the environment's proposedCommitStatuses here to hold a revert to the checks a
	// promotion passes. With autoMerge true and none listed the revert merges at once; with some it
	// waits for them, its pull request open; with autoMerge false a person merges it.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	RequiredCommitStatuses []CommitStatusKey `json:"requiredCommitStatuses,omitempty"`

	// BypassGates lets the revert merge while a closed Gate holds its PromotionStrategy (a freeze):
	// a revert restores a state that already ran, and holding it makes an incident longer. The
	// bypass is recorded in status.gateBypass and in an Event. Without it the revert waits, its
	// pull request open, until the Gate opens.
	// +optional
	BypassGates bool `json:"bypassGates,omitempty"`

	// Trigger records what started an automatic rollback; a RollbackPolicy fills it. Empty for a
	// revert made by a person.
	// +optional
	Trigger *RollbackTrigger `json:"trigger,omitempty"`

	// Suspend pauses the revert where it stands (nothing is pushed, opened or merged). The
	// annotation reconcile.fluxcd.io/suspended has the same effect and carries a reason.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// RollbackTrigger is the failed check that started an automatic rollback.
type RollbackTrigger struct {
	// Policy is the RollbackPolicy that fired.
	// +kubebuilder:validation:MaxLength=253
	Policy string `json:"policy"`
	// Key is the commit-status key found in failure (the commitstatus.sluice.dev/key label).
	// +kubebuilder:validation:MaxLength=63
	Key string `json:"key"`
	// FailingSince is when the check was first seen failing on the bad commit, to the
	// microsecond. Time to restore is measured from it.
	FailingSince metav1.MicroTime `json:"failingSince"`
}

// RevertCommitStatus is the observed state of a RevertCommit.
//
// The promoter-controller reads it to hold the environment: while phase is Pending (with
// badDrySHA set), Open or Merged, and the rollback.sluice.dev/lift-hold annotation is absent, it
// does not promote badDrySHA, or a dry commit older than it on the dry branch, into
// spec.activeBranch of spec.promotionStrategyRef. A newer dry commit (a fix forward) promotes
// normally. Failed holds nothing.
type RevertCommitStatus struct {
	// ObservedGeneration is the last metadata.generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase is Pending, Open, Merged, Failed or Superseded.
	// +optional
	Phase RevertPhase `json:"phase,omitempty"`

	// BadDrySHA is the dry commit reverted: what the environment ran when the revert was decided.
	// +optional
	BadDrySHA string `json:"badDrySHA,omitempty"`

	// TargetDrySHA is the dry commit the environment goes back to.
	// +optional
	TargetDrySHA string `json:"targetDrySHA,omitempty"`

	// TargetHydratedSHA is the environment's commit for TargetDrySHA, whose tree the revert
	// commit restores.
	// +optional
	TargetHydratedSHA string `json:"targetHydratedSHA,omitempty"`

	// RevertBranch holds the revert commit: <activeBranch>-revert-<name>.
	// +optional
	RevertBranch string `json:"revertBranch,omitempty"`

	// RevertSHA is the revert commit.
	// +optional
	RevertSHA string `json:"revertSHA,omitempty"`

	// BaseSHA is the environment commit the revert commit was written on: the revert merges only
	// while the environment branch is still there. When the branch moves first, the revert is
	// planned again on the new tip (a new revert commit), or superseded by a fix forward.
	// +optional
	BaseSHA string `json:"baseSHA,omitempty"`

	// GateBypass records that the revert was asked to merge while a Gate held the strategy
	// (spec.bypassGates): which hold, and when.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	GateBypass string `json:"gateBypass,omitempty"`

	// PullRequest is the promoter.sluice.dev PullRequest that carries the revert.
	// +optional
	PullRequest *RevertPullRequest `json:"pullRequest,omitempty"`

	// MergeSHA is the environment branch's commit once the revert is merged.
	// +optional
	MergeSHA string `json:"mergeSHA,omitempty"`

	// MergedExternally is true when a person merged the revert outside Sluice.
	// +optional
	MergedExternally bool `json:"mergedExternally,omitempty"`

	// StartTime is when the revert commit was pushed, to the microsecond.
	// +optional
	StartTime *metav1.MicroTime `json:"startTime,omitempty"`

	// MergeTime is when the merge was made or observed.
	// +optional
	MergeTime *metav1.Time `json:"mergeTime,omitempty"`

	// Conditions follow kstatus: Ready once merged, Reconciling while under way, Stalled when
	// the input cannot work (with a message saying what to change).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RevertPullRequest points at the PullRequest of a revert.
type RevertPullRequest struct {
	// Name of the PullRequest object.
	Name string `json:"name"`
	// URL of the pull request on the SCM; empty on plain git.
	// +optional
	URL string `json:"url,omitempty"`
}

// RevertCommit restores an environment branch to the hydrated manifests of an earlier dry
// commit, as one new commit whose tree is the environment's commit for that dry SHA: whole and
// atomic, in git, through a pull request from <activeBranch>-revert-<name> that the
// promoter-controller opens and merges.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=revert,categories=sluice
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=`.spec.promotionStrategyRef.name`
// +kubebuilder:printcolumn:name="Environment",type=string,JSONPath=`.spec.activeBranch`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Bad Dry",type=string,JSONPath=`.status.badDrySHA`,priority=1
// +kubebuilder:printcolumn:name="Target Dry",type=string,JSONPath=`.status.targetDrySHA`,priority=1
// +kubebuilder:printcolumn:name="Pull Request",type=string,JSONPath=`.status.pullRequest.url`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.spec.reason`,priority=1
type RevertCommit struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec RevertCommitSpec `json:"spec"`
	// +optional
	Status RevertCommitStatus `json:"status,omitempty"`
}

// RevertCommitList is a list of RevertCommits.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type RevertCommitList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RevertCommit `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &RevertCommit{}, &RevertCommitList{})
}
