package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ScmProviderType names the kind of SCM server.
// +kubebuilder:validation:Enum=github;gitlab;gitea;forgejo;git
type ScmProviderType string

const (
	// ScmProviderGitHub is github.com or GitHub Enterprise Server.
	ScmProviderGitHub ScmProviderType = "github"
	// ScmProviderGitLab is gitlab.com or a self-managed GitLab.
	ScmProviderGitLab ScmProviderType = "gitlab"
	// ScmProviderGitea is a Gitea server.
	ScmProviderGitea ScmProviderType = "gitea"
	// ScmProviderForgejo is a Forgejo server (Gitea-compatible API).
	ScmProviderForgejo ScmProviderType = "forgejo"
	// ScmProviderGit is plain git hosting with no SCM API: pull requests exist only as Sluice
	// objects and commit statuses only in the cluster.
	ScmProviderGit ScmProviderType = "git"
)

// ScmProviderSpec is the desired state of an ScmProvider.
//
// +kubebuilder:validation:XValidation:rule="self.type == 'git' || has(self.secretRef)",message="secretRef is required for every type except git"
// +kubebuilder:validation:XValidation:rule="!(self.type in ['gitea', 'forgejo']) || has(self.baseURL)",message="baseURL is required for gitea and forgejo"
// +kubebuilder:validation:XValidation:rule="self.type != 'git' || !has(self.baseURL)",message="baseURL has no meaning for type git, which has no SCM API"
// +kubebuilder:validation:XValidation:rule="!has(self.githubApp) || self.type == 'github'",message="githubApp applies only to type github"
// +kubebuilder:validation:XValidation:rule="!has(self.baseURL) || self.baseURL.startsWith('https://') || (has(self.allowInsecureLoopbackHTTP) && self.allowInsecureLoopbackHTTP && self.baseURL.matches('^http://(localhost|127[.][0-9.]+|[[]::1[]])(:[0-9]+)?(/|$)'))",message="baseURL must use https; http is accepted only for a loopback host with allowInsecureLoopbackHTTP: true"
type ScmProviderSpec struct {
	// Type of the SCM: github, gitlab, gitea, forgejo, or git for plain git hosting without an SCM API.
	Type ScmProviderType `json:"type"`

	// BaseURL of the SCM server. Defaults: https://api.github.com for github and https://gitlab.com
	// for gitlab. For GitHub Enterprise Server give the server URL (https://github.example.com);
	// /api/v3 is added. Required for gitea and forgejo. Must not carry credentials, a query or a fragment.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self)",message="baseURL must be an absolute URL such as https://gitea.example.com"
	// +kubebuilder:validation:XValidation:rule="!self.contains('@')",message="baseURL must not contain credentials; put them in the Secret named by secretRef"
	// +kubebuilder:validation:XValidation:rule="!self.contains('?') && !self.contains('#')",message="baseURL must not contain a query or a fragment"
	BaseURL string `json:"baseURL,omitempty"`

	// AllowInsecureLoopbackHTTP accepts an http:// baseURL when its host is loopback (localhost,
	// 127.0.0.0/8 or ::1). It exists for tests and local demos; remote SCMs always need https.
	// +optional
	AllowInsecureLoopbackHTTP bool `json:"allowInsecureLoopbackHTTP,omitempty"`

	// SecretRef names a Secret in this namespace with the API credentials: key "token" (an access
	// token), or "githubAppPrivateKey" with githubApp set; and optionally "webhookSecret", without
	// which webhooks from this SCM are rejected. Required for every type except git.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`

	// GitHubApp authenticates as a GitHub App installation instead of with a token. Commit statuses
	// are then written through the Checks API, which only Apps may use.
	// +optional
	GitHubApp *GitHubApp `json:"githubApp,omitempty"`

	// CABundle names PEM certificates to trust in addition to the system roots, for SCM servers
	// behind a private CA. TLS verification is never turned off.
	// +optional
	CABundle *CABundleReference `json:"caBundle,omitempty"`

	// RateLimit caps the requests sent to this SCM. One token bucket per ScmProvider object is shared
	// by every reconciler in a controller process. Defaults depend on the type; see the
	// documentation of pkg/scm/ratelimit.
	// +optional
	RateLimit *RateLimit `json:"rateLimit,omitempty"`

	// Suspend stops reconciliation of this object. The annotation reconcile.fluxcd.io/suspended has
	// the same effect and carries a reason.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// GitHubApp identifies a GitHub App installation. The App's private key is read from the key
// "githubAppPrivateKey" of the Secret named by secretRef.
type GitHubApp struct {
	// AppID is the numeric ID of the GitHub App.
	// +kubebuilder:validation:Minimum=1
	AppID int64 `json:"appID"`

	// InstallationID is the numeric ID of the App's installation on the organisation or user.
	// +kubebuilder:validation:Minimum=1
	InstallationID int64 `json:"installationID"`
}

// CABundleReference names a key holding PEM certificates in a Secret or ConfigMap of this namespace.
type CABundleReference struct {
	// Kind of the object holding the bundle.
	// +kubebuilder:validation:Enum=Secret;ConfigMap
	Kind string `json:"kind"`

	// Name of the Secret or ConfigMap.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Key holding the PEM bundle. Defaults to ca.crt.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key,omitempty"`
}

// RateLimit is a token bucket: QPS requests per second on average, at most Burst at once.
type RateLimit struct {
	// QPS is the sustained request rate, as a decimal string such as "1.4" or "10".
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:XValidation:rule="double(self) > 0.0",message="qps must be greater than zero"
	QPS string `json:"qps"`

	// Burst is the number of requests that may be sent at once after a quiet period. Defaults to
	// the provider type's default burst.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Burst int32 `json:"burst,omitempty"`
}

// ScmProviderStatus is the observed state of an ScmProvider.
type ScmProviderStatus struct {
	// ObservedGeneration is the last metadata.generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions follow kstatus: Ready, Reconciling and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ScmProvider is an SCM server (GitHub, GitLab, Gitea, Forgejo or plain git) and the credentials
// and request budget Sluice uses with it.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=scmp,categories=sluice
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Base URL",type=string,JSONPath=`.spec.baseURL`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ScmProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ScmProviderSpec `json:"spec"`
	// +optional
	Status ScmProviderStatus `json:"status,omitempty"`
}

// ScmProviderList is a list of ScmProviders.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type ScmProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ScmProvider `json:"items"`
}
