package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bounds that keep a HealthCheck object small however many objects it covers.
const (
	// MaxResources is how many objects status.resources lists; status.counts has the full counts.
	MaxResources = 50
	// SummarySuspended is status.summary while the HealthCheck is suspended.
	SummarySuspended = "suspended"
	// MaxResourceMessage is the longest message kept per listed object, in bytes.
	MaxResourceMessage = 256
)

// Condition types and reasons specific to HealthCheck. Ready, Reconciling, Stalled and Suspended
// come from pkg/conditions.
const (
	// ConditionCommitStatusPublished is True while the CommitStatus of spec.commitStatus is up to
	// date, and False with a reason when it cannot be written (for example when the CommitStatus
	// CRD is not installed). It is absent without spec.commitStatus.
	ConditionCommitStatusPublished = "CommitStatusPublished"

	// ReasonHealthy: every target is Current (for the soak time, when one is set).
	ReasonHealthy = "Healthy"
	// ReasonSoaking: every target is Current, and the soak time has not passed yet.
	ReasonSoaking = "Soaking"
	// ReasonProgressing: some targets are InProgress, Unknown or not found, within the timeout.
	ReasonProgressing = "Progressing"
	// ReasonFailed: a target has Failed.
	ReasonFailed = "Failed"
	// ReasonTimedOut: targets stayed unhealthy for longer than spec.timeout.
	ReasonTimedOut = "TimedOut"
	// ReasonNoTargets: the targets matched no object, which is never healthy.
	ReasonNoTargets = "NoTargets"
	// ReasonWaitingForWatches: the watches on the targets' kinds have not listed yet.
	ReasonWaitingForWatches = "WaitingForWatches"
	// ReasonWatchFailed: a target kind cannot be listed or watched, usually missing RBAC.
	ReasonWatchFailed = "WatchFailed"
	// ReasonInvalidCELExpression: an expression of spec.healthCheckExprs or of the user library
	// does not compile. The message names the expression and the CEL error.
	ReasonInvalidCELExpression = "InvalidCELExpression"
	// ReasonInvalidHealthCheckExprs: entries of spec.healthCheckExprs conflict or are malformed.
	ReasonInvalidHealthCheckExprs = "InvalidHealthCheckExprs"
	// ReasonInvalidUserLibrary: the cluster-wide user library ConfigMap cannot be parsed.
	ReasonInvalidUserLibrary = "InvalidUserLibrary"
	// ReasonInvalidTarget: a target cannot be used as written (bad apiVersion, a cross-namespace
	// reference the controller forbids).
	ReasonInvalidTarget = "InvalidTarget"
	// ReasonAccessDenied: the HealthCheck's ServiceAccount may not read a target, so nothing of
	// it is read or reported.
	ReasonAccessDenied = "AccessDenied"

	// ReasonPublished: the CommitStatus is up to date.
	ReasonPublished = "Published"
	// ReasonCommitStatusCRDMissing: the commitstatus.sluice.dev CRD is not installed. Health is
	// still computed; nothing is published.
	ReasonCommitStatusCRDMissing = "CommitStatusCRDMissing"
	// ReasonRevisionUnavailable: the revision source has no usable commit yet.
	ReasonRevisionUnavailable = "RevisionUnavailable"
	// ReasonNameConflict: a CommitStatus with the HealthCheck's name exists and belongs to
	// something else; it is left alone.
	ReasonNameConflict = "NameConflict"
	// ReasonPublishFailed: writing the CommitStatus failed and is retried.
	ReasonPublishFailed = "PublishFailed"
)

// Labels the controller puts on the CommitStatus objects it writes.
const (
	// HealthCheckLabel names the HealthCheck, in the same namespace, that wrote a CommitStatus.
	HealthCheckLabel = "health.sluice.dev/healthcheck"
)

// HealthCheckSpec is the desired state of a HealthCheck.
type HealthCheckSpec struct {
	// Targets select the objects whose health is computed. Objects selected by several targets
	// count once.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	Targets []Target `json:"targets"`

	// ServiceAccountName is the ServiceAccount of the HealthCheck's namespace whose read rights
	// bound what the check may read: every target, Kustomization and Application is read only
	// when that ServiceAccount may get (or, for a selector, list) it, as the API server answers a
	// SubjectAccessReview. Empty means the controller's --default-service-account, and, when
	// that is not set either, the controller's own rights.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// HealthCheckExprs are RFC-0009 health checks for kinds that do not follow kstatus. They take
	// precedence over the user library, which takes precedence over the built-in library. An entry
	// without kind covers every kind of its API group; an entry with a kind overrides it for that
	// kind. Kinds no entry matches use kstatus.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	HealthCheckExprs []CustomHealthCheck `json:"healthCheckExprs,omitempty"`

	// Timeout is how long the targets may stay unhealthy (in progress, unknown or not found) before
	// the ones still in progress count as Failed. The clock starts when the set stops being
	// healthy, or when the revision or this spec changes. For example "5m" or "1h".
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('168h')",message="timeout must be positive and at most 168h, for example 5m"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// SoakTime is how long every target must stay Current before the set counts as healthy.
	// Empty or "0s" means healthy as soon as every target is Current.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('168h')",message="soakTime must be between 0s and 168h, for example 10m"
	// +optional
	SoakTime *metav1.Duration `json:"soakTime,omitempty"`

	// CommitStatus publishes the health as a CommitStatus (commitstatus.sluice.dev) for the
	// revision the environment runs: pending while in progress, success once healthy for the soak
	// time, failure when a target has Failed or the timeout has passed.
	// +optional
	CommitStatus *CommitStatusPublication `json:"commitStatus,omitempty"`

	// Suspend stops evaluating; status keeps the last result and says it is suspended.
	// The annotation reconcile.fluxcd.io/suspended has the same effect and carries a reason.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// Target selects objects. Set exactly one of object, selector, kustomization or application.
//
// +kubebuilder:validation:XValidation:rule="[has(self.object), has(self.selector), has(self.kustomization), has(self.application)].filter(x, x).size() == 1",message="set exactly one of object, selector, kustomization or application"
type Target struct {
	// Object is one object, by kind and name.
	// +optional
	Object *ObjectReference `json:"object,omitempty"`

	// Selector is every object of a kind in a namespace whose labels match.
	// +optional
	Selector *KindSelector `json:"selector,omitempty"`

	// Kustomization is the inventory of a Flux Kustomization (kustomize.toolkit.fluxcd.io):
	// every object listed in its status.inventory.entries.
	// +optional
	Kustomization *SourceReference `json:"kustomization,omitempty"`

	// Application is the resources of an Argo CD Application (argoproj.io): every object listed
	// in its status.resources.
	// +optional
	Application *SourceReference `json:"application,omitempty"`
}

// ObjectReference names one object.
type ObjectReference struct {
	// APIVersion of the object, for example apps/v1 or cert-manager.io/v1.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	APIVersion string `json:"apiVersion"`
	// Kind of the object, for example Deployment.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Namespace of the object; defaults to the HealthCheck's. Ignored for cluster-scoped kinds.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// KindSelector selects the objects of a kind in one namespace by label.
type KindSelector struct {
	// APIVersion of the objects, for example cert-manager.io/v1.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	APIVersion string `json:"apiVersion"`
	// Kind of the objects, for example Certificate.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Namespace to select in; defaults to the HealthCheck's. Ignored for cluster-scoped kinds.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// LabelSelector filters the objects; empty selects every object of the kind in the namespace.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// SourceReference names a Flux Kustomization or an Argo CD Application.
type SourceReference struct {
	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Namespace of the object; defaults to the HealthCheck's.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// CustomHealthCheck is one RFC-0009 entry: CEL expressions that compute the health of a kind, or
// of every kind of an API group when kind is empty. The object is bound as self and as the
// top-level variables apiVersion, kind, metadata, spec and status. Expressions run in the order
// inProgress, failed, current; the first true one decides, and none true means InProgress. An
// object whose status.observedGeneration differs from metadata.generation is InProgress without
// evaluating anything.
type CustomHealthCheck struct {
	// APIVersion is group/version, for example cert-manager.io/v1. Without kind the entry covers
	// every version of the group.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	APIVersion string `json:"apiVersion"`
	// Kind narrows the entry to one kind of that exact apiVersion.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Kind string `json:"kind,omitempty"`
	// Current is true once the object has reached its desired state.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=10000
	Current string `json:"current"`
	// InProgress is true while the object converges. Evaluated first.
	// +kubebuilder:validation:MaxLength=10000
	// +optional
	InProgress string `json:"inProgress,omitempty"`
	// Failed is true when the object has failed. Evaluated second.
	// +kubebuilder:validation:MaxLength=10000
	// +optional
	Failed string `json:"failed,omitempty"`
}

// CommitStatusPublication says which CommitStatus to write for the running revision.
type CommitStatusPublication struct {
	// Key is the value of the commitstatus.sluice.dev/key label, which promotion checks select
	// CommitStatuses by, for example "health-staging".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Key string `json:"key"`

	// Name is the name of the check on the SCM (the status context); defaults to the key.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Name string `json:"name,omitempty"`

	// RepositoryRef names the ScmRepository (scm.sluice.dev), in the HealthCheck's namespace, that
	// the revision belongs to.
	RepositoryRef RepositoryReference `json:"repositoryRef"`

	// Revision says where the running revision comes from.
	Revision RevisionSource `json:"revision"`

	// URL links to details, such as a dashboard. http or https.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https']",message="url must be an absolute http or https URL"
	// +optional
	URL string `json:"url,omitempty"`
}

// RepositoryReference names a ScmRepository in the same namespace.
type RepositoryReference struct {
	// Name of the ScmRepository.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// RevisionSource is where the running revision comes from. Set exactly one field.
//
// +kubebuilder:validation:XValidation:rule="[has(self.kustomization), has(self.application), has(self.fixed)].filter(x, x).size() == 1",message="set exactly one of kustomization, application or fixed"
type RevisionSource struct {
	// Kustomization reads status.lastAppliedRevision of a Flux Kustomization, for example
	// "main@sha1:<sha>", and publishes for <sha>.
	// +optional
	Kustomization *SourceReference `json:"kustomization,omitempty"`

	// Application reads status.sync.revision of an Argo CD Application (status.sync.revisions[0]
	// for a multi-source Application).
	// +optional
	Application *SourceReference `json:"application,omitempty"`

	// Fixed is a full commit id: 40 (SHA-1) or 64 (SHA-256) lowercase hex characters.
	// +kubebuilder:validation:Pattern=`^([0-9a-f]{40}|[0-9a-f]{64})$`
	// +optional
	Fixed string `json:"fixed,omitempty"`
}

// ResourceStatus is the health of one object.
// +kubebuilder:validation:Enum=Current;InProgress;Failed;Unknown;NotFound
type ResourceStatus string

// The five health statuses of an object, as in kstatus and RFC-0009.
const (
	StatusCurrent    ResourceStatus = "Current"
	StatusInProgress ResourceStatus = "InProgress"
	StatusFailed     ResourceStatus = "Failed"
	StatusUnknown    ResourceStatus = "Unknown"
	StatusNotFound   ResourceStatus = "NotFound"
)

// ResourceHealth is the health of one target object.
type ResourceHealth struct {
	// APIVersion of the object.
	APIVersion string `json:"apiVersion"`
	// Kind of the object.
	Kind string `json:"kind"`
	// Namespace of the object; empty for cluster-scoped objects.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the object; empty when a whole kind could not be read.
	// +optional
	Name string `json:"name,omitempty"`
	// Status is Current, InProgress, Failed, Unknown or NotFound.
	Status ResourceStatus `json:"status"`
	// Message explains the status, for example the condition or the CEL error that decided it.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Message string `json:"message,omitempty"`
}

// HealthCounts counts the targets per status.
type HealthCounts struct {
	// Total is the number of target objects.
	Total int32 `json:"total"`
	// Current objects have reached their desired state.
	Current int32 `json:"current"`
	// InProgress objects are still converging.
	InProgress int32 `json:"inProgress"`
	// Failed objects have failed, or stayed in progress past the timeout.
	Failed int32 `json:"failed"`
	// Unknown objects could not be evaluated, for example because an expression failed.
	Unknown int32 `json:"unknown"`
	// NotFound objects are named by a target but do not exist.
	NotFound int32 `json:"notFound"`
}

// PublishedCommitStatus is the CommitStatus last written.
type PublishedCommitStatus struct {
	// Name of the CommitStatus, in the HealthCheck's namespace.
	Name string `json:"name"`
	// SHA is the commit the status is about.
	SHA string `json:"sha"`
	// Phase is pending, success or failure.
	Phase string `json:"phase"`
	// Description is the summary written with it.
	// +optional
	Description string `json:"description,omitempty"`
}

// HealthCheckStatus is the observed state of a HealthCheck.
type HealthCheckStatus struct {
	// ObservedGeneration is the last metadata.generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions follow kstatus: Ready (every target Current, for the soak time), Reconciling
	// while targets progress or soak, Stalled on invalid input (reason InvalidCELExpression names
	// the expression and the CEL error), plus CommitStatusPublished with spec.commitStatus.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Healthy is true while every target is Current and has been for the soak time. It is false
	// while the HealthCheck is suspended: its health is not evaluated then.
	// +optional
	Healthy bool `json:"healthy"`

	// Summary is "<current>/<total>", for printing, or "suspended" while the HealthCheck is
	// suspended and its health is not evaluated.
	// +optional
	Summary string `json:"summary,omitempty"`

	// Counts counts the targets per status.
	// +optional
	Counts HealthCounts `json:"counts"`

	// Resources lists at most 50 targets, the least healthy first: Failed, Unknown, NotFound,
	// InProgress, then Current. Counts has the full numbers.
	// +kubebuilder:validation:MaxItems=50
	// +listType=atomic
	// +optional
	Resources []ResourceHealth `json:"resources,omitempty"`

	// ObservedRevision is the revision the targets were evaluated at, as its source reports it
	// (for example "main@sha1:<sha>").
	// +optional
	ObservedRevision string `json:"observedRevision,omitempty"`

	// LastHealthyTime is when the set last turned healthy. With healthy true it still is.
	// +optional
	LastHealthyTime *metav1.Time `json:"lastHealthyTime,omitempty"`

	// LastHealthyRevision is the revision that was running when the set last turned healthy.
	// +optional
	LastHealthyRevision string `json:"lastHealthyRevision,omitempty"`

	// HealthySince is when every target became Current; the soak time counts from here.
	// +optional
	HealthySince *metav1.Time `json:"healthySince,omitempty"`

	// UnhealthySince is when the set stopped being healthy, or the revision or the spec changed;
	// the timeout counts from here.
	// +optional
	UnhealthySince *metav1.Time `json:"unhealthySince,omitempty"`

	// CommitStatus is the CommitStatus last written for spec.commitStatus.
	// +optional
	CommitStatus *PublishedCommitStatus `json:"commitStatus,omitempty"`
}

// HealthCheck computes the health of a set of objects: explicit objects, objects selected by
// label, the inventory of a Flux Kustomization or the resources of an Argo CD Application. Kinds
// with an RFC-0009 CEL check (from spec, the user library or the built-in library) use it; the
// others use kstatus. The controller watches the targets' kinds and re-evaluates on their events.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=hcheck,categories=sluice
// +kubebuilder:printcolumn:name="Healthy",type=boolean,JSONPath=`.status.healthy`
// +kubebuilder:printcolumn:name="Current/Total",type=string,JSONPath=`.status.summary`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.observedRevision`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
type HealthCheck struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec HealthCheckSpec `json:"spec"`
	// +optional
	Status HealthCheckStatus `json:"status,omitempty"`
}

// HealthCheckList is a list of HealthChecks.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type HealthCheckList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HealthCheck `json:"items"`
}
