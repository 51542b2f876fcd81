package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations, labels and bounds of ManifestReleases.
const (
	// RequestedAtAnnotation asks for the source to be read again now (Flux's convention).
	RequestedAtAnnotation = "reconcile.fluxcd.io/requestedAt"
	// RollbackToAnnotation asks for a manual rollback to a kept snapshot number:
	// kubectl annotate manifestrelease NAME rollback.sluice.dev/rollback-to=N --overwrite.
	// A value is acted on once; remove the annotation to ask for the same number again.
	RollbackToAnnotation = "rollback.sluice.dev/rollback-to"
	// ReleaseNameLabel and ReleaseNamespaceLabel mark every object a ManifestRelease applies,
	// test objects included.
	ReleaseNameLabel      = "rollback.sluice.dev/release-name"
	ReleaseNamespaceLabel = "rollback.sluice.dev/release-namespace"
	// AdoptAnnotation, set to "true" on an existing object by whoever owns it, lets a release
	// whose manifests name that object take it over; its content from before is kept on it and
	// put back when the release lets it go (a rollback, a prune). Without it an upgrade that names
	// an existing object that is not the release's stops before anything is applied.
	AdoptAnnotation = "rollback.sluice.dev/adopt"
	// TestLabel marks test objects, which are deleted once the tests end.
	TestLabel = "rollback.sluice.dev/test"
	// VersionAnnotation on a snapshot's head Secret is the version it holds.
	VersionAnnotation = "rollback.sluice.dev/version"
	// RevisionAnnotation on a snapshot's head Secret is the source revision it came from.
	RevisionAnnotation = "rollback.sluice.dev/revision"

	// ManifestReleaseFinalizer holds a deleted ManifestRelease until its objects are deleted
	// (spec.prune true, the default) or left in place (spec.prune false, or suspended).
	ManifestReleaseFinalizer = "rollback.sluice.dev/finalizer"

	// MaxReleaseHistory bounds status.history.
	MaxReleaseHistory = 20
	// MaxInventory bounds status.inventory.
	MaxInventory = 5000
)

// Condition types of ManifestReleases, beside Ready, Reconciling and Stalled.
const (
	// ConditionTestSuccess is the result of the last tests: True passed, False failed (with the
	// test that failed), absent when no tests ran.
	ConditionTestSuccess = "TestSuccess"
	// ConditionRolledBack is True after a rollback, with why and to which snapshot; it turns
	// False with the next successful upgrade.
	ConditionRolledBack = "RolledBack"
	// ConditionSnapshotsVerified is False, reason SnapshotNotInChain, once a snapshot Secret was
	// met whose digest is not the one status.snapshots recorded for its number (planted, or
	// replaced): it was neither loaded nor deleted. The next successful upgrade removes it.
	ConditionSnapshotsVerified = "SnapshotsVerified"
)

// ManifestReleaseSpec is a versioned set of plain manifests, applied with tests and rolled back
// on failure (RFC-0002, for any manifest set).
//
// Deviations from RFC-0002, which extends the Flux Operator's FluxInstance: this is a kind of its
// own for any manifests; filters also match test object names and take globs; a release can be
// rolled back by hand to any kept snapshot.
//
// +kubebuilder:validation:XValidation:rule="has(self.targetNamespace) == has(oldSelf.targetNamespace) && (!has(self.targetNamespace) || self.targetNamespace == oldSelf.targetNamespace)",message="targetNamespace is immutable: it places every object of every snapshot; create another ManifestRelease"
type ManifestReleaseSpec struct {
	// Source gives the manifests of the desired version.
	Source ManifestSource `json:"source"`

	// ServiceAccountName is the ServiceAccount of the release's namespace whose rights everything
	// the release does to the cluster is done with, by impersonation (as Flux's Kustomization
	// does): reading the source, writing and reading its snapshot Secrets, applying, testing,
	// waiting, pruning and rolling back. Empty means the controller's --default-service-account,
	// and, when that is not set either, the controller's own rights.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// Version is what people read for this version, such as v2.3.0. Empty means the git tag,
	// branch@sha, the OCI tag or digest, or the ConfigMaps' resource versions.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Version string `json:"version,omitempty"`

	// TargetNamespace is the namespace of namespaced objects that name none. Empty means the
	// release's namespace. It cannot change.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// Test runs test objects after each upgrade, as RFC-0002's spec.test.
	// +optional
	Test *ReleaseTest `json:"test,omitempty"`

	// Timeout bounds the wait for health after applying, and the wait for the tests.
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="timeout must be positive, for example 5m"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Interval is how often a moving source (a branch, an OCI tag) is looked at again.
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s')",message="interval must be at least 10s"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// HistoryLimit is how many snapshots are kept; the deployed one is always kept too.
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	// +optional
	HistoryLimit *int32 `json:"historyLimit,omitempty"`

	// Prune deletes the objects a new version no longer has, once it passed its tests, and all
	// of the release's objects when the release is deleted (as the ServiceAccount it acts as), as
	// Flux's Kustomization does. False leaves them in place; so does deleting a suspended release.
	// +kubebuilder:default=true
	// +optional
	Prune *bool `json:"prune,omitempty"`

	// Suspend stops upgrades and rollbacks. The annotation reconcile.fluxcd.io/suspended has the
	// same effect and carries a reason.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// ManifestSource is where the manifests come from: exactly one of git, oci and configMaps.
//
// +kubebuilder:validation:XValidation:rule="(has(self.git) ? 1 : 0) + (has(self.oci) ? 1 : 0) + (has(self.configMaps) ? 1 : 0) == 1",message="set exactly one of source.git, source.oci and source.configMaps"
type ManifestSource struct {
	// Git reads the manifests under a path of a ScmRepository (scm.sluice.dev).
	// +optional
	Git *GitManifestSource `json:"git,omitempty"`
	// OCI reads the manifests from an OCI artifact whose layer is a tarball, as Flux ships its
	// own (flux push artifact).
	// +optional
	OCI *OCIManifestSource `json:"oci,omitempty"`
	// ConfigMaps read every key of each ConfigMap, in this namespace, as YAML.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	ConfigMaps []ConfigMapReference `json:"configMaps,omitempty"`
}

// GitManifestSource is a path of a git repository at a tag, a branch or a commit.
//
// +kubebuilder:validation:XValidation:rule="(has(self.tag) ? 1 : 0) + (has(self.branch) ? 1 : 0) == 1",message="set exactly one of tag and branch (a commit goes with the branch it is on)"
// +kubebuilder:validation:XValidation:rule="!has(self.commit) || has(self.branch)",message="commit needs the branch it is on"
type GitManifestSource struct {
	// RepositoryRef names the ScmRepository in this namespace.
	RepositoryRef LocalReference `json:"repositoryRef"`
	// Tag to read, such as v2.3.0.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Tag string `json:"tag,omitempty"`
	// Branch to follow, or, with commit, the branch that holds the commit.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Branch string `json:"branch,omitempty"`
	// Commit pins a full SHA on branch.
	// +kubebuilder:validation:Pattern=`^([0-9a-f]{40}|[0-9a-f]{64})$`
	// +optional
	Commit string `json:"commit,omitempty"`
	// Path is the folder of the manifests (every .yaml, .yml and .json file under it); empty
	// means the root.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Path string `json:"path,omitempty"`
}

// OCIManifestSource is an OCI artifact at a tag or a digest.
//
// +kubebuilder:validation:XValidation:rule="(has(self.tag) ? 1 : 0) + (has(self.digest) ? 1 : 0) == 1",message="set exactly one of tag and digest"
type OCIManifestSource struct {
	// Repository is the artifact's repository without a tag, such as
	// ghcr.io/fluxcd/flux-manifests (an oci:// prefix is accepted).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Repository string `json:"repository"`
	// Tag to read.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Tag string `json:"tag,omitempty"`
	// Digest pins the manifest, such as sha256:….
	// +kubebuilder:validation:Pattern=`^sha256:[0-9a-f]{64}$`
	// +optional
	Digest string `json:"digest,omitempty"`
	// Path is the folder of the manifests inside the artifact; empty means all of it.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Path string `json:"path,omitempty"`
	// SecretRef names a Secret of type kubernetes.io/dockerconfigjson in this namespace with
	// credentials for the registry.
	// +optional
	SecretRef *LocalReference `json:"secretRef,omitempty"`
	// Insecure allows plain HTTP to the registry, for local registries and tests.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
}

// LocalReference names an object in the release's namespace.
type LocalReference struct {
	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ConfigMapReference names a ConfigMap in the release's namespace.
type ConfigMapReference struct {
	// Name of the ConfigMap.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ReleaseTest is RFC-0002's spec.test.
type ReleaseTest struct {
	// Enable runs the tests after each upgrade.
	// +optional
	Enable bool `json:"enable,omitempty"`
	// IgnoreFailures keeps an upgrade whose tests fail (TestSuccess is still False).
	// +optional
	IgnoreFailures bool `json:"ignoreFailures,omitempty"`
	// DefinitionsFrom lists the ConfigMaps whose key holds test objects (YAML). Jobs pass when
	// they complete and fail when they fail; other kinds pass when healthy.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	DefinitionsFrom []TestDefinitionReference `json:"definitionsFrom,omitempty"`
	// Filters select the tests to run. A filter's name is a glob matched against the test
	// object's name and the name of its ConfigMap. With filters that include, a test must match
	// one of them; a test that matches a filter with exclude: true never runs.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Filters []TestFilter `json:"filters,omitempty"`
}

// TestDefinitionReference is a key of a ConfigMap holding test objects.
type TestDefinitionReference struct {
	// Kind of the object; only ConfigMap.
	// +kubebuilder:validation:Enum=ConfigMap
	// +kubebuilder:default=ConfigMap
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name of the ConfigMap, in the release's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key holding the test objects.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// TestFilter selects tests by name.
type TestFilter struct {
	// Name is a glob, such as smoke-* .
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Exclude skips the tests that match.
	// +optional
	Exclude bool `json:"exclude,omitempty"`
}

// ReleaseAction is what an operation does.
//
// +kubebuilder:validation:Enum=Upgrade;Rollback;ManualRollback
type ReleaseAction string

const (
	// ActionUpgrade applies a new version.
	ActionUpgrade ReleaseAction = "Upgrade"
	// ActionRollback goes back to the deployed version after an upgrade failed.
	ActionRollback ReleaseAction = "Rollback"
	// ActionManualRollback goes to a snapshot a person asked for.
	ActionManualRollback ReleaseAction = "ManualRollback"
)

// TestResult is the outcome of the tests of one version.
//
// +kubebuilder:validation:Enum=Passed;Failed;NotRun
type TestResult string

const (
	TestPassed TestResult = "Passed"
	TestFailed TestResult = "Failed"
	TestNotRun TestResult = "NotRun"
)

// ReleaseOperation is an upgrade or rollback under way. It is written to the status before the
// first object is applied, so a controller that restarts finishes it or rolls it back.
type ReleaseOperation struct {
	// Action is Upgrade, Rollback or ManualRollback.
	Action ReleaseAction `json:"action"`
	// Number is the snapshot being applied.
	Number int64 `json:"number"`
	// Version and Digest of that snapshot.
	Version string `json:"version"`
	Digest  string `json:"digest"`
	// Revision is the source revision of an upgrade.
	// +optional
	Revision string `json:"revision,omitempty"`
	// From is the snapshot deployed when the operation started; 0 for a first install.
	// +optional
	From int64 `json:"from,omitempty"`
	// Reason is why a rollback happens.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	Reason string `json:"reason,omitempty"`
	// StartTime is when the operation started.
	StartTime metav1.Time `json:"startTime"`
}

// ReleaseHistoryEntry is one version that was applied, newest first in status.history.
type ReleaseHistoryEntry struct {
	// Number is the snapshot number.
	Number int64 `json:"number"`
	// Action that applied it.
	Action ReleaseAction `json:"action"`
	// Version is what people read.
	Version string `json:"version"`
	// Digest is the snapshot's sha256 digest.
	Digest string `json:"digest"`
	// Revision is the source revision, such as a commit SHA or an OCI digest.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Time is when it was applied.
	Time metav1.Time `json:"time"`
	// Test is the result of its tests.
	// +optional
	Test TestResult `json:"test,omitempty"`
	// RolledBack is true when it failed and the previous version was put back.
	// +optional
	RolledBack bool `json:"rolledBack,omitempty"`
	// Message says what failed.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	Message string `json:"message,omitempty"`
}

// InventoryEntry is one object a release applied.
type InventoryEntry struct {
	// +optional
	Group   string `json:"group,omitempty"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// SnapshotLink is one snapshot the release wrote, in the digest chain of status.snapshots.
type SnapshotLink struct {
	// Number is the snapshot number; its head Secret is <name>.<number>.
	Number int64 `json:"number"`
	// Digest is the sha256 digest of its manifests, which its Secrets must hold and prove.
	// +kubebuilder:validation:MaxLength=128
	Digest string `json:"digest"`
	// Previous is the digest of the snapshot recorded before it; empty for the first.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Previous string `json:"previous,omitempty"`
}

// ManifestReleaseStatus is the observed state of a ManifestRelease.
type ManifestReleaseStatus struct {
	// ObservedGeneration is the last metadata.generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// UpgradeNumber is the snapshot number of the deployed version; snapshot Secrets are named
	// <name>.<number>.
	// +optional
	UpgradeNumber int64 `json:"upgradeNumber,omitempty"`
	// DeployedVersion is the version running, and DeployedDigest its snapshot's digest.
	// +optional
	DeployedVersion string `json:"deployedVersion,omitempty"`
	// +optional
	DeployedDigest string `json:"deployedDigest,omitempty"`

	// LastAttemptedVersion is the last version tried, LastAttemptedDigest its manifests' digest
	// and LastAttemptedRevision its source revision. A version that failed or was rolled back
	// by hand is not tried again until the source gives other manifests or the spec changes.
	// +optional
	LastAttemptedVersion string `json:"lastAttemptedVersion,omitempty"`
	// +optional
	LastAttemptedDigest string `json:"lastAttemptedDigest,omitempty"`
	// +optional
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`
	// LastAttemptedGeneration is the generation of the spec the last attempt was made with.
	// +optional
	LastAttemptedGeneration int64 `json:"lastAttemptedGeneration,omitempty"`
	// LastAttemptFailed is true while the last attempted version is held back: it failed, or a
	// person rolled back from it.
	// +optional
	LastAttemptFailed bool `json:"lastAttemptFailed,omitempty"`

	// LastHandledReconcileAt is the reconcile.fluxcd.io/requestedAt annotation value last acted
	// on: set the annotation to ask for the source to be read now, and wait for this field.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`

	// LastHandledRollback is the rollback-to annotation value last acted on.
	// +optional
	LastHandledRollback string `json:"lastHandledRollback,omitempty"`

	// Operation is the upgrade or rollback under way, if any.
	// +optional
	Operation *ReleaseOperation `json:"operation,omitempty"`

	// Snapshots is the digest chain of the snapshots the release wrote and keeps, oldest first:
	// each one's number and digest, and the digest of the one before. The status is this
	// controller's alone to write, so a Secret whose digest is not recorded here for its number
	// is never loaded or deleted as a snapshot, whatever its labels and owner say.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Snapshots []SnapshotLink `json:"snapshots,omitempty"`

	// History lists the versions applied, newest first, at most 20.
	// +kubebuilder:validation:MaxItems=20
	// +listType=atomic
	// +optional
	History []ReleaseHistoryEntry `json:"history,omitempty"`

	// Inventory lists the objects applied. While an operation is under way it holds the
	// objects of both versions, so none is lost track of.
	// +kubebuilder:validation:MaxItems=5000
	// +listType=atomic
	// +optional
	Inventory []InventoryEntry `json:"inventory,omitempty"`

	// Conditions follow kstatus: Ready, Reconciling, Stalled, plus TestSuccess and RolledBack.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ManifestRelease applies a versioned set of plain manifests (an operator, a platform
// component, Flux itself), keeps each applied version as a numbered, compressed snapshot
// Secret <name>.<number>, runs tests after each upgrade, and rolls back to the previous snapshot
// when the upgrade fails (RFC-0002).
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mrel,categories=sluice
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="a ManifestRelease name has at most 63 characters: it labels the release's snapshots"
// +kubebuilder:printcolumn:name="Deployed",type=string,JSONPath=`.status.deployedVersion`
// +kubebuilder:printcolumn:name="Number",type=integer,JSONPath=`.status.upgradeNumber`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Tests",type=string,JSONPath=`.status.conditions[?(@.type=="TestSuccess")].status`
// +kubebuilder:printcolumn:name="Rolled Back",type=string,JSONPath=`.status.conditions[?(@.type=="RolledBack")].status`
// +kubebuilder:printcolumn:name="Attempted",type=string,JSONPath=`.status.lastAttemptedVersion`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ManifestRelease struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ManifestReleaseSpec `json:"spec"`
	// +optional
	Status ManifestReleaseStatus `json:"status,omitempty"`
}

// ManifestReleaseList is a list of ManifestReleases.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type ManifestReleaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ManifestRelease `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &ManifestRelease{}, &ManifestReleaseList{})
}
