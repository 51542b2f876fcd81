package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
)

// Annotations and labels of the promoter.
const (
	// RefreshAnnotation asks for a refresh now: set it to any new value (a timestamp, say) on a
	// PromotionStrategy and the controller fetches the repository and re-evaluates at once.
	// The last value handled is reported in status.lastHandledRefresh.
	RefreshAnnotation = "promoter.sluice.dev/refresh"
	// StrategyLabel names the PromotionStrategy on the ProposedCommits and PullRequests it owns.
	StrategyLabel = "promoter.sluice.dev/strategy"
	// EnvironmentLabel names the environment branch on the ProposedCommits and PullRequests.
	EnvironmentLabel = "promoter.sluice.dev/environment"
	// StageLabel is the environment's place in its strategy, from 0, on the ProposedCommits and
	// PullRequests: a promoter opens the pull requests of earlier stages first, so a wave of new
	// commits reaches every first environment before it opens the later ones'.
	StageLabel = "promoter.sluice.dev/stage"
)

// Defaults and bounds.
const (
	// DefaultProposedBranchSuffix is appended to an environment branch to name its proposed branch.
	DefaultProposedBranchSuffix = "-next"
	// MaxLastHealthyDrySHAs bounds status.environments[].lastHealthyDrySHAs.
	MaxLastHealthyDrySHAs = 10
	// MaxHistory bounds status.environments[].history.
	MaxHistory = 10
	// MaxEnvironments bounds spec.environments.
	MaxEnvironments = 32
)

// LocalReference names an object in the same namespace.
type LocalReference struct {
	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// CommitStatusSelector selects the CommitStatus objects labelled
// commitstatus.sluice.dev/key=<key> whose spec.sha is the commit being checked.
type CommitStatusSelector struct {
	// Key is the value of the commitstatus.sluice.dev/key label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Key string `json:"key"`
}

// CommitState describes one commit of an environment: the tip of its branch (active) or of its
// proposed branch (proposed).
type CommitState struct {
	// DrySHA is the dry commit the hydrated commit was rendered from, read from its hydrator note
	// or hydrator.metadata file.
	// +optional
	DrySHA string `json:"drySHA,omitempty"`
	// HydratedSHA is the commit at the tip of the branch.
	// +optional
	HydratedSHA string `json:"hydratedSHA,omitempty"`
	// CommitTime is the committer time of the dry commit when known, else of the hydrated commit.
	// +optional
	CommitTime *metav1.Time `json:"commitTime,omitempty"`
	// Subject is the first line of the dry commit's message when known, else of the hydrated commit.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Subject string `json:"subject,omitempty"`
	// CommitStatuses is the aggregate phase of each commit-status key checked on HydratedSHA.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=key
	// +optional
	CommitStatuses []CommitStatusPhase `json:"commitStatuses,omitempty"`
	// Phase aggregates CommitStatuses: success when every key passes (or none is required),
	// failure when any fails, pending otherwise.
	// +optional
	Phase commitstatusv1alpha1.CommitStatusPhase `json:"phase,omitempty"`
}

// CommitStatusPhase is the aggregate phase of one key on one commit: failure if any CommitStatus
// of that key fails, success if one succeeds and none fails, pending if none exists or all pend.
type CommitStatusPhase struct {
	// Key is the commitstatus.sluice.dev/key label value.
	Key string `json:"key"`
	// Phase is pending, success or failure.
	Phase commitstatusv1alpha1.CommitStatusPhase `json:"phase"`
}
