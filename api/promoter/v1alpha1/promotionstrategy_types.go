package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PromotionStrategySpec is the desired state of a PromotionStrategy.
//
// Deviations from the proposal it follows (gitops-promotion-rollback-proposal.md):
//   - repoRef is called repositoryRef and names an scm.sluice.dev ScmRepository;
//   - environments take gates and an after list (a DAG); without after, the order is linear as listed;
//   - the fallback poll interval is a field (interval);
//   - after lists are checked by the controller (unknown names, cycles), not by the API server,
//     whose CEL cost budget a nested check over 32 environments exceeds;
//   - the refresh annotation is promoter.sluice.dev/refresh.
//
// +kubebuilder:validation:XValidation:rule="self.environments.all(e, self.environments.exists_one(o, o.branch == e.branch))",message="environment branches must be unique"
type PromotionStrategySpec struct {
	// RepositoryRef names the ScmRepository (scm.sluice.dev) holding the dry and environment branches.
	RepositoryRef LocalReference `json:"repositoryRef"`

	// DryBranch holds the dry (source) manifests. The order of its commits decides what "moving
	// backwards" means.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=250
	DryBranch string `json:"dryBranch"`

	// ActiveCommitStatuses must all pass on an environment's active hydrated commit before its dry
	// SHA may be promoted to the environments after it. Applies to every environment.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	ActiveCommitStatuses []CommitStatusSelector `json:"activeCommitStatuses,omitempty"`

	// ProposedCommitStatuses must all pass on an environment's proposed hydrated commit before it
	// is merged. Applies to every environment.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	ProposedCommitStatuses []CommitStatusSelector `json:"proposedCommitStatuses,omitempty"`

	// Environments are the hydrated branches, promoted in order: each waits for the one listed
	// before it, unless it says otherwise with after.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	Environments []Environment `json:"environments"`

	// ProposedBranchSuffix names the branch that carries each environment's proposed change:
	// <branch><suffix>.
	// +kubebuilder:default="-next"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +optional
	ProposedBranchSuffix string `json:"proposedBranchSuffix,omitempty"`

	// Interval is the fallback poll of the repository. Webhooks, the refresh annotation and
	// watches on CommitStatuses and Gates trigger a reconcile at once; the poll catches what
	// they miss.
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="interval must be at least 1s, for example 5m"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Suspend stops promotion: nothing is fetched, opened or merged. The annotation
	// reconcile.fluxcd.io/suspended has the same effect and carries a reason.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// FluxSourceRefresh says whether a merge into an environment branch (a promotion, or a
	// revert of this strategy's) asks the Flux GitRepositories that track that branch to fetch at
	// once, with the reconcile.fluxcd.io/requestedAt annotation as `flux reconcile source git`
	// sets it, instead of waiting for their interval. Disabled leaves Flux to its interval.
	// +kubebuilder:default=Enabled
	// +optional
	FluxSourceRefresh FluxSourceRefresh `json:"fluxSourceRefresh,omitempty"`
}

// FluxSourceRefresh is Enabled or Disabled.
// +kubebuilder:validation:Enum=Enabled;Disabled
type FluxSourceRefresh string

const (
	// FluxSourceRefreshEnabled asks the Flux sources of a branch to fetch once it is merged into.
	FluxSourceRefreshEnabled FluxSourceRefresh = "Enabled"
	// FluxSourceRefreshDisabled leaves them to their interval.
	FluxSourceRefreshDisabled FluxSourceRefresh = "Disabled"
)

// RefreshesFluxSources reports whether merges into this strategy's branches wake the Flux sources
// that track them: unless Disabled (an object stored before the field existed has it empty).
func (s *PromotionStrategySpec) RefreshesFluxSources() bool {
	return s.FluxSourceRefresh != FluxSourceRefreshDisabled
}

// Environment is one hydrated branch of a PromotionStrategy.
type Environment struct {
	// Branch holds the environment's hydrated manifests.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	Branch string `json:"branch"`

	// AutoMerge merges the environment's pull request once it is eligible. With false, a person
	// merges it. Default true.
	// +kubebuilder:default=true
	// +optional
	AutoMerge *bool `json:"autoMerge,omitempty"`

	// ActiveCommitStatuses are checked, besides the strategy's, on this environment's active
	// commit before its dry SHA moves on to the next environments.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	ActiveCommitStatuses []CommitStatusSelector `json:"activeCommitStatuses,omitempty"`

	// ProposedCommitStatuses are checked, besides the strategy's, on this environment's proposed
	// commit before it is merged.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	ProposedCommitStatuses []CommitStatusSelector `json:"proposedCommitStatuses,omitempty"`

	// Gates must allow before this environment's pull request is merged (read from Gate status;
	// a missing or unevaluated gate holds).
	// +optional
	Gates *GateSelector `json:"gates,omitempty"`

	// After lists the environments this one waits for. Empty means the one listed just before it
	// (none for the first). Use it for fan-out (several environments after one) and fan-in (one
	// after several). Unknown names and cycles stall the strategy with a message saying which.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=200
	// +listType=set
	// +optional
	After []string `json:"after,omitempty"`
}

// GateSelector names the gates an environment waits for.
type GateSelector struct {
	// Refs name Gates (gating.sluice.dev); a namespace-less ref is in the strategy's namespace.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Refs []GateReference `json:"refs"`
	// Require is all (every gate open) or oneOf (at least one open). Default all.
	// +kubebuilder:validation:Enum=all;oneOf
	// +kubebuilder:default=all
	// +optional
	Require string `json:"require,omitempty"`
}

// GateReference names a Gate.
type GateReference struct {
	// Name of the Gate.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Namespace of the Gate; the strategy's own when empty.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// PromotionStrategyStatus is the observed state of a PromotionStrategy.
type PromotionStrategyStatus struct {
	// ObservedGeneration is the last metadata.generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Environments reports each environment, in spec order.
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=branch
	// +optional
	Environments []EnvironmentStatus `json:"environments,omitempty"`

	// LastHandledRefresh is the value of the promoter.sluice.dev/refresh annotation last acted on.
	// +optional
	LastHandledRefresh string `json:"lastHandledRefresh,omitempty"`

	// LastFetchTime is when the repository was last fetched.
	// +optional
	LastFetchTime *metav1.Time `json:"lastFetchTime,omitempty"`

	// Conditions follow kstatus. Ready is True only when no environment has a change left to
	// promote (reason Promoted), so `kubectl wait --for=condition=Ready` waits for "promoted".
	// It is False with reason Promoting (and Reconciling=True) while a merge is under way,
	// Blocked while a rule, check, gate or rollback holds a change (see
	// status.environments[].blocks), and WaitingForMerge while an eligible change waits for a
	// person (autoMerge false). Stalled=True when the spec or repository cannot work.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EnvironmentStatus is what the controller observed for one environment.
type EnvironmentStatus struct {
	// Branch is the environment branch.
	Branch string `json:"branch"`
	// Active is the tip of the environment branch, with its active commit statuses.
	// +optional
	Active CommitState `json:"active,omitempty"`
	// Proposed is the tip of the proposed branch, with its proposed commit statuses.
	// +optional
	Proposed CommitState `json:"proposed,omitempty"`
	// PullRequest is the pull request promoting Proposed into Active, while there is one.
	// +optional
	PullRequest *PullRequestReference `json:"pullRequest,omitempty"`
	// Eligible is true when the proposed change may be merged now.
	// +optional
	Eligible bool `json:"eligible,omitempty"`
	// Blocked says which rule, check or gate holds the proposed change, when one does, in one
	// line; Blocks says the same one rule at a time.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Blocked string `json:"blocked,omitempty"`
	// Blocks lists what holds the proposed change, one entry per rule and environment, for
	// scripts: for example
	// kubectl get ps app -o jsonpath='{.status.environments[?(@.branch=="prod")].blocks[*].rule}'.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	Blocks []PromotionBlock `json:"blocks,omitempty"`
	// LastHealthyDrySHAs are the latest dry SHAs whose active commit statuses all passed in this
	// environment, newest first, at most 10. A rollback picks its target here.
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	// +optional
	LastHealthyDrySHAs []HealthyDrySHA `json:"lastHealthyDrySHAs,omitempty"`
	// History holds the latest promotions into this environment, newest first, at most 10.
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	// +optional
	History []PromotionRecord `json:"history,omitempty"`
}

// BlockRule names what holds a proposed change.
//
// +kubebuilder:validation:Enum=NoMovingBackwards;EarlierEnvironmentActive;EarlierEnvironmentChecks;ProposedChecks;Gates;UnknownDrySHA;HeldAfterRollback;PullRequestClosed
type BlockRule string

// The rules that can hold a proposed change.
const (
	// BlockNoMovingBackwards is rule 1: the proposed dry SHA is older than what a later environment runs.
	BlockNoMovingBackwards BlockRule = "NoMovingBackwards"
	// BlockEarlierEnvironmentActive is rule 2: an earlier environment does not run the proposed dry SHA yet.
	BlockEarlierEnvironmentActive BlockRule = "EarlierEnvironmentActive"
	// BlockEarlierEnvironmentChecks is rule 3: an active commit status of an earlier environment does not pass.
	BlockEarlierEnvironmentChecks BlockRule = "EarlierEnvironmentChecks"
	// BlockProposedChecks is rule 4: a proposed commit status of the proposed commit does not pass.
	BlockProposedChecks BlockRule = "ProposedChecks"
	// BlockGates: a gate of the environment holds.
	BlockGates BlockRule = "Gates"
	// BlockUnknownDrySHA: the proposed commit does not say which dry commit it was rendered from.
	BlockUnknownDrySHA BlockRule = "UnknownDrySHA"
	// BlockHeldAfterRollback: a RevertCommit (rollback.sluice.dev) reverted this dry SHA, or a
	// newer one, in the environment.
	BlockHeldAfterRollback BlockRule = "HeldAfterRollback"
	// BlockPullRequestClosed: the pull request was closed without merging.
	BlockPullRequestClosed BlockRule = "PullRequestClosed"
)

// PromotionBlock is one rule that holds a proposed change.
type PromotionBlock struct {
	// Rule is what holds the change.
	Rule BlockRule `json:"rule"`
	// Environment is the environment the rule looks at: a later one for NoMovingBackwards, an
	// earlier one for EarlierEnvironmentActive and EarlierEnvironmentChecks, else this one.
	// +kubebuilder:validation:MaxLength=200
	Environment string `json:"environment"`
	// Message says it for people, with what would release the change.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Message string `json:"message,omitempty"`
}

// HealthyDrySHA is a dry SHA seen healthy in an environment.
type HealthyDrySHA struct {
	// SHA is the dry commit.
	SHA string `json:"sha"`
	// HydratedSHA is the environment commit that carried it.
	// +optional
	HydratedSHA string `json:"hydratedSHA,omitempty"`
	// Time is when every active commit status was first seen passing.
	Time metav1.Time `json:"time"`
}

// PromotionRecord is one completed promotion.
type PromotionRecord struct {
	// DrySHA is the dry commit promoted.
	DrySHA string `json:"drySHA"`
	// HydratedSHA is the proposed commit that was merged.
	// +optional
	HydratedSHA string `json:"hydratedSHA,omitempty"`
	// MergeSHA is the environment branch's commit after the merge.
	// +optional
	MergeSHA string `json:"mergeSHA,omitempty"`
	// Time is when the merge was observed.
	Time metav1.Time `json:"time"`
	// PullRequest is the name of the PullRequest object. A later promotion reuses the name, so
	// PullRequestNumber and PullRequestURL say which pull request this was.
	// +optional
	PullRequest string `json:"pullRequest,omitempty"`
	// PullRequestNumber is the pull request's number on the SCM; 0 on plain git.
	// +optional
	PullRequestNumber int64 `json:"pullRequestNumber,omitempty"`
	// PullRequestURL is the pull request on the SCM; empty on plain git.
	// +optional
	PullRequestURL string `json:"pullRequestURL,omitempty"`
	// External is true when someone merged it outside Sluice.
	// +optional
	External bool `json:"external,omitempty"`
}

// PullRequestReference points at the PullRequest of an environment.
type PullRequestReference struct {
	// Name of the PullRequest object.
	Name string `json:"name"`
	// State of the pull request: open, merged or closed.
	// +optional
	State PullRequestState `json:"state,omitempty"`
	// URL of the pull request on the SCM, when it has one.
	// +optional
	URL string `json:"url,omitempty"`
}

// PromotionStrategy promotes changes of a dry branch through environment branches of hydrated
// manifests, by pull requests from <env>-next to <env> that are merged once the proposal's four
// rules and the environment's gates allow.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ps,categories=sluice
// +kubebuilder:printcolumn:name="Dry Branch",type=string,JSONPath=`.spec.dryBranch`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PromotionStrategy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PromotionStrategySpec `json:"spec"`
	// +optional
	Status PromotionStrategyStatus `json:"status,omitempty"`
}

// PromotionStrategyList is a list of PromotionStrategies.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type PromotionStrategyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PromotionStrategy `json:"items"`
}
