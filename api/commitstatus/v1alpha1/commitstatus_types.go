package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KeyLabel carries the key that promotion checks select CommitStatuses by, together with spec.sha.
const KeyLabel = "commitstatus.sluice.dev/key"

// ImportedLabel marks a CommitStatus imported from the SCM (a commit status, check run or pipeline
// the SCM holds) by the commitstatus-controller, with the value "true". Imported objects are owned
// by the PromotionStrategy whose commit they describe, are never mirrored back to the SCM, and only
// the controller writes them (the chart's ValidatingAdmissionPolicy refuses other writers).
const ImportedLabel = "commitstatus.sluice.dev/imported"

// SourceAnnotation says where on the SCM an imported CommitStatus comes from: status, check-run
// or pipeline.
const SourceAnnotation = "commitstatus.sluice.dev/source"

// MaxKeyLength is the longest key: a label value.
const MaxKeyLength = 63

// KeyForName turns the name of a check on the SCM (a status context such as "ci/kubeconform")
// into the key an imported CommitStatus carries, which promotions select it by: a label value.
// A name that is already a valid label value is its own key; otherwise every run of characters
// other than letters, digits, '-', '_' and '.' becomes '-', the ends are trimmed to a letter or
// digit, and the key is cut to 63 characters. "ci/kubeconform" becomes "ci-kubeconform".
func KeyForName(name string) string {
	out := make([]byte, 0, len(name))
	dash := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		switch {
		case ok:
			out = append(out, c)
			dash = false
		case !dash:
			out = append(out, '-')
			dash = true
		}
	}
	if len(out) > MaxKeyLength {
		out = out[:MaxKeyLength]
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
	for len(out) > 0 && !alnum(out[0]) {
		out = out[1:]
	}
	for len(out) > 0 && !alnum(out[len(out)-1]) {
		out = out[:len(out)-1]
	}
	return string(out)
}

// ShortSHALength is how many characters of the commit id status.shortSHA keeps, as git log
// --oneline shows them.
const ShortSHALength = 7

// ShortSHA returns the start of sha that status.shortSHA holds.
func ShortSHA(sha string) string {
	if len(sha) > ShortSHALength {
		return sha[:ShortSHALength]
	}
	return sha
}

// CommitStatusPhase is the verdict about a commit.
// +kubebuilder:validation:Enum=pending;success;failure
type CommitStatusPhase string

const (
	// CommitStatusPending means the check has not finished. GitHub: pending (or an in-progress check
	// run); GitLab: pending; Gitea: pending.
	CommitStatusPending CommitStatusPhase = "pending"
	// CommitStatusSuccess means the check passed. GitHub, GitLab and Gitea: success.
	CommitStatusSuccess CommitStatusPhase = "success"
	// CommitStatusFailure means the check failed. GitHub: failure; GitLab: failed; Gitea: failure.
	CommitStatusFailure CommitStatusPhase = "failure"
)

// RepositoryReference names a ScmRepository (scm.sluice.dev) in the same namespace.
type RepositoryReference struct {
	// Name of the ScmRepository.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// CommitStatusSpec is the desired state of a CommitStatus.
type CommitStatusSpec struct {
	// RepositoryRef names the ScmRepository the commit belongs to.
	RepositoryRef RepositoryReference `json:"repositoryRef"`

	// SHA is the full commit id: 40 lowercase hex characters (SHA-1) or 64 (SHA-256).
	// Abbreviated ids are refused because they can become ambiguous.
	// +kubebuilder:validation:Pattern=`^([0-9a-f]{40}|[0-9a-f]{64})$`
	SHA string `json:"sha"`

	// Name is the short, stable name of the check on the SCM: the status context on GitHub and
	// Gitea, the status name on GitLab, the check run name on GitHub Apps.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Name string `json:"name"`

	// Description is a one-line explanation shown next to the status. GitHub statuses keep at most
	// 140 characters, so longer text is cut there.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Description string `json:"description,omitempty"`

	// Phase is the verdict: pending, success or failure.
	Phase CommitStatusPhase `json:"phase"`

	// URL links to details about the check, such as a dashboard. http or https.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https']",message="url must be an absolute http or https URL"
	URL string `json:"url,omitempty"`

	// Suspend stops mirroring this status to the SCM. The annotation reconcile.fluxcd.io/suspended has
	// the same effect and carries a reason.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// CommitStatusStatus is the observed state of a CommitStatus.
type CommitStatusStatus struct {
	// ObservedGeneration is the last metadata.generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ShortSHA is spec.sha cut to its first 7 characters, written by the controller for the SHA
	// printer column: CRD printer columns take a JSONPath, which cannot shorten a string.
	// +optional
	// +kubebuilder:validation:MaxLength=7
	ShortSHA string `json:"shortSHA,omitempty"`

	// SyncedPhase is the phase last written to the SCM.
	// +optional
	SyncedPhase CommitStatusPhase `json:"syncedPhase,omitempty"`

	// SyncedSHA is the commit the status was last written to.
	// +optional
	SyncedSHA string `json:"syncedSHA,omitempty"`

	// SyncedDigest is a digest of everything last sent to the SCM (repository, SHA, name, phase,
	// description, URL). The controller calls the SCM only when the desired digest differs.
	// +optional
	SyncedDigest string `json:"syncedDigest,omitempty"`

	// ProviderID is the id the SCM gave the status it holds: a GitHub check run id (as an App) or
	// status id, a GitLab or Gitea status id. Empty for plain git, where statuses live in the cluster.
	// +optional
	ProviderID string `json:"providerID,omitempty"`

	// LastSyncTime is when the status was last written to the SCM.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`

	// Conditions follow kstatus: Ready once synced, Reconciling while syncing, Stalled on a permanent
	// error (bad credentials, unknown repository or commit, invalid input) with a message saying what
	// to fix.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// CommitStatus states something about one commit (for example "healthy in staging"). The
// commitstatus-controller mirrors it to the SCM, and promotions select it by the
// commitstatus.sluice.dev/key label and spec.sha.
//
// The SHA column prints status.shortSHA, which the controller keeps equal to the start of
// spec.sha; the full id is in the wide output (kubectl get -o wide).
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cstatus,categories=sluice
// +kubebuilder:printcolumn:name="Key",type=string,JSONPath=`.metadata.labels.commitstatus\.sluice\.dev/key`
// +kubebuilder:printcolumn:name="SHA",type=string,JSONPath=`.status.shortSHA`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.spec.phase`
// +kubebuilder:printcolumn:name="Synced",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Full SHA",type=string,JSONPath=`.spec.sha`,priority=1
// +kubebuilder:printcolumn:name="Repository",type=string,JSONPath=`.spec.repositoryRef.name`,priority=1
type CommitStatus struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec CommitStatusSpec `json:"spec"`
	// +optional
	Status CommitStatusStatus `json:"status,omitempty"`
}

// CommitStatusList is a list of CommitStatuses.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type CommitStatusList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CommitStatus `json:"items"`
}
