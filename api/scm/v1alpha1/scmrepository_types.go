package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GitAuthType is how git authenticates to the repository.
// +kubebuilder:validation:Enum=token;basic;ssh
type GitAuthType string

const (
	// GitAuthToken sends an access token as the HTTPS password (Secret keys: token, optional username).
	GitAuthToken GitAuthType = "token"
	// GitAuthBasic sends a user name and password over HTTPS (Secret keys: username, password).
	GitAuthBasic GitAuthType = "basic"
	// GitAuthSSH uses an SSH key and pins the server's host key (Secret keys: identity, known_hosts,
	// optional passphrase).
	GitAuthSSH GitAuthType = "ssh"
)

// ScmRepositorySpec is the desired state of a ScmRepository.
//
// +kubebuilder:validation:XValidation:rule="self.url.startsWith('https://') || self.url.startsWith('ssh://') || self.url.matches('^[A-Za-z0-9._~-]+@[A-Za-z0-9.-]+:[A-Za-z0-9._~/-]+$') || (has(self.allowInsecureLoopbackHTTP) && self.allowInsecureLoopbackHTTP && self.url.matches('^http://(localhost|127[.][0-9.]+|[[]::1[]])(:[0-9]+)?(/|$)'))",message="url must be https://…, ssh://… or user@host:path; http is accepted only for a loopback host with allowInsecureLoopbackHTTP: true"
// +kubebuilder:validation:XValidation:rule="!has(self.auth) || (self.auth.type == 'ssh') == !self.url.matches('^https?://')",message="auth.type ssh needs an ssh URL, and token or basic auth needs an https URL"
type ScmRepositorySpec struct {
	// URL git clones from and pushes to: https://host/owner/name.git, ssh://git@host/owner/name.git
	// or git@host:owner/name.git. It must not carry credentials; they come from auth.secretRef.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="!self.matches('^https?://[^/]*@') && !self.matches('^[a-z]+://[^/@]*:[^/@]*@')",message="url must not contain credentials (an ssh user name such as git@ is fine); use auth.secretRef"
	URL string `json:"url"`

	// AllowInsecureLoopbackHTTP accepts an http:// url when its host is loopback (localhost,
	// 127.0.0.0/8 or ::1). It exists for tests and local demos.
	// +optional
	AllowInsecureLoopbackHTTP bool `json:"allowInsecureLoopbackHTTP,omitempty"`

	// ProviderRef names the ScmProvider in this namespace that hosts the repository. Use an
	// ScmProvider of type git for plain git hosting.
	ProviderRef LocalObjectReference `json:"providerRef"`

	// Owner of the repository on the SCM: a user or organisation, or on GitLab a group path that may
	// contain subgroups (group/subgroup).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$`
	Owner string `json:"owner"`

	// Name of the repository on the SCM, without the .git suffix.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.-]+$`
	Name string `json:"name"`

	// Auth is how git authenticates for clone and push. Omit it for public repositories.
	// +optional
	Auth *GitAuth `json:"auth,omitempty"`

	// Suspend stops reconciliation of this object. The annotation reconcile.fluxcd.io/suspended has
	// the same effect and carries a reason.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// GitAuth selects the git transport credentials.
type GitAuth struct {
	// Type of credentials: token (Secret key token, optional username), basic (username, password)
	// or ssh (identity, known_hosts, optional passphrase). SSH host keys are always verified against
	// known_hosts.
	Type GitAuthType `json:"type"`

	// SecretRef names the Secret in this namespace holding the credentials.
	SecretRef LocalObjectReference `json:"secretRef"`
}

// ScmRepositoryStatus is the observed state of a ScmRepository.
type ScmRepositoryStatus struct {
	// ObservedGeneration is the last metadata.generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions follow kstatus: Ready, Reconciling and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ScmRepository is a git repository Sluice reads and writes, and where it lives on an SCM.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=scmrepo,categories=sluice
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.providerRef.name`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ScmRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ScmRepositorySpec `json:"spec"`
	// +optional
	Status ScmRepositoryStatus `json:"status,omitempty"`
}

// ScmRepositoryList is a list of ScmRepositories.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type ScmRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ScmRepository `json:"items"`
}
