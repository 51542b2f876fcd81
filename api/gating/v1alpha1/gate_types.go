package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GateState is open or closed.
//
// +kubebuilder:validation:Enum=open;closed
type GateState string

const (
	// StateOpen lets held objects reconcile.
	StateOpen GateState = "open"
	// StateClosed holds the objects that reference the gate.
	StateClosed GateState = "closed"
)

// Reasons explain the effective state in status.reason, in history entries and in the Open condition.
const (
	// ReasonManual: spec.closed is true, the gate is closed by hand.
	ReasonManual = "Manual"
	// ReasonOverride: an unexpired spec.override decides.
	ReasonOverride = "Override"
	// ReasonWindow: a time window decides (an active closed window, or the open windows).
	ReasonWindow = "Window"
	// ReasonDefault: nothing closes the gate, so it is open.
	ReasonDefault = "Default"
	// ReasonSuspended: the gate is suspended and keeps the state it had.
	ReasonSuspended = "Suspended"
	// ReasonInvalid: the spec cannot be evaluated (bad schedule, time zone or duration), so the gate fails closed.
	ReasonInvalid = "Invalid"
)

// ReasonGateCycle is the Stalled reason of a gate that is part of a cycle of gates naming each
// other in gating.sluice.dev/gates: a gate is never held by itself, so the references that close
// the cycle are ignored until one of them is removed.
const ReasonGateCycle = "GateCycle"

// ConditionOpen is True while the gate is open, so `kubectl wait --for=condition=Open gate/NAME` works.
const ConditionOpen = "Open"

// Bounds of the lists kept in status, so a busy gate cannot grow its object without limit.
const (
	MaxHistory = 20
	MaxHeld    = 50
)

// GateSpec is the desired state of a Gate.
//
// The effective state is decided by the first rule that applies.
// Rule 1: spec.closed is true: closed (reason Manual). A manual close beats every override except a bypass, one set on the gate while it was closed by hand (override.replaces.closed: true), which applies until it expires; then the gate is closed by hand again.
// Rule 2: spec.override is set and not expired: the override's state (reason Override).
// Rule 3: spec.override has expired: the first override it replaced that has not expired yet (reason Override).
// Rule 4: a closed window is active: closed (reason Window). Closing beats opening.
// Rule 5: there are open windows: open only while one of them is active (reason Window).
// Rule 6: otherwise: open (reason Default).
//
// So when an override expires the gate returns to what the override replaced.
// A spec that cannot be evaluated closes the gate (reason Invalid) and the gate reports Stalled.
type GateSpec struct {
	// Closed closes the gate by hand. A closed gate holds every object that references it,
	// whatever the windows say, and whatever an override says unless that override was set as a
	// bypass of this manual close (override.replaces.closed). Opening or closing is a plain spec update.
	// +optional
	Closed bool `json:"closed,omitempty"`

	// Message is a short human note on why the gate is closed by hand, e.g. "release 1.4 sign-off pending".
	// It is shown in status while spec.closed closes the gate (reason Manual). An open gate does not
	// show it, so a gate closed with a message and then opened by setting closed: false never reports
	// the old message as the reason it is open.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Message string `json:"message,omitempty"`

	// ManualSyncs says whether a person may still sync an Argo CD Application by hand while this
	// gate holds it. Allow (the default) stops only automated sync and self-heal. Deny also refuses
	// a manual sync (argocd app sync, the Sync button) at the API server, with the hold's reason,
	// through the admission policy the gate-controller chart installs; without that policy, Deny
	// marks the Application but refuses nothing. Flux objects are not affected: a suspended Flux
	// object ignores a manual reconcile anyway.
	// +kubebuilder:validation:Enum=Allow;Deny
	// +optional
	ManualSyncs ManualSyncs `json:"manualSyncs,omitempty"`

	// Suspend freezes the gate: while suspended its open/closed state is kept as it was, neither
	// windows nor overrides change it, and status says it is suspended.
	// The annotation reconcile.fluxcd.io/suspended has the same effect and carries a reason.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Windows are recurring time windows. An active closed window closes the gate (a freeze);
	// if any open windows exist, the gate is open only while one of them is active.
	// Windows of the same kind that overlap simply merge.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Windows []GateWindow `json:"windows,omitempty"`

	// Override sets the state until a time, e.g. open for two hours during a freeze for a hotfix,
	// or closed until Monday. It beats the windows. It beats a manual close (spec.closed: true)
	// only when it was set on the gate while closed by hand (replaces.closed: true).
	// When it expires the gate returns to what it replaced: an earlier override that has not
	// expired, a manual close, or else spec.closed and the windows; status.expiredOverride reports
	// it until the override is removed or replaced. `kubectl gate open|close NAME --for D` fills
	// replaces from the gate as it was.
	// +optional
	Override *GateOverride `json:"override,omitempty"`

	// Approvals let named revisions through a closed gate, and nothing else: an object the gate
	// holds is released while its source is at an approved revision, and held again when its
	// source moves to one that is not approved. A promotion through an environment the gate
	// guards goes ahead only for an approved dry SHA. An open gate lets everything through, so
	// approvals matter only while it is closed. `kubectl gate approve NAME --revision REV` adds one.
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=revision
	// +optional
	Approvals []GateApproval `json:"approvals,omitempty"`
}

// GateApproval lets one revision through a closed gate.
type GateApproval struct {
	// Revision is what is approved: a Flux source or artifact revision such as "main@sha1:<sha>"
	// or "v1.2@sha256:<digest>", an OCI digest such as "sha256:<digest>", a Git commit SHA such as
	// a promotion's dry SHA (all hex digits), or a chart version such as "6.0.1". A revision that
	// names a digest or commit SHA matches any revision with that same digest, whatever its
	// branch or tag, and never by a prefix; any other revision matches only itself.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9._/@:+-]+$')",message="revision must be one revision such as main@sha1:<sha>, sha256:<digest>, a full commit SHA or a chart version, with no spaces or commas"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[0-9a-fA-F]{7,}$') || size(self) in [40, 64]",message="a commit SHA must be written in full (40 or 64 hex digits): a short one would approve anything that starts with it"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([^@]*@)?(sha1|sha256):') || self.matches('^([^@]*@)?(sha1:[0-9a-fA-F]{40}|sha256:[0-9a-fA-F]{64})$')",message="a digest must be written in full (sha1: and 40 hex digits, sha256: and 64): a short or missing one would approve nothing yet show as approved"
	// +kubebuilder:validation:XValidation:rule="self.matches('^(([A-Za-z0-9._/+-]+@)?(sha1:[0-9a-fA-F]{40}|sha256:[0-9a-fA-F]{64})|[0-9a-fA-F]{40}|[0-9a-fA-F]{64}|v?[0-9]+[.][0-9]+[.][0-9]+([-][0-9A-Za-z.-]+)?([+][0-9A-Za-z.-]+)?)$')",message="revision must be one of: <ref>@sha1:<40 hex digits> or <ref>@sha256:<64 hex digits> as Flux writes it (main@sha1:<sha>), a digest (sha256:<64 hex digits>), a full commit SHA, or a chart version (6.0.1)"
	Revision string `json:"revision"`

	// Until is when the approval expires (RFC 3339); none means it stays until it is removed.
	// +kubebuilder:validation:XValidation:rule="self > timestamp('0001-01-01T00:00:00Z')",message="until must be a real time such as 2025-03-10T09:00:00Z"
	// +optional
	Until *metav1.Time `json:"until,omitempty"`

	// By is who approved, e.g. the user name the API server knows them by. kubectl gate approve
	// fills it in from the kubeconfig's identity.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	By string `json:"by,omitempty"`

	// At is when it was approved; kubectl gate approve fills it in.
	// +optional
	At *metav1.Time `json:"at,omitempty"`

	// Message says why, e.g. "CVE fix signed off by #security".
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Message string `json:"message,omitempty"`
}

// ManualSyncs is whether a held Argo CD Application may be synced by hand.
type ManualSyncs string

const (
	// ManualSyncsAllow lets a person sync a held Application by hand.
	ManualSyncsAllow ManualSyncs = "Allow"
	// ManualSyncsDeny refuses a manual sync of a held Application at the API server.
	ManualSyncsDeny ManualSyncs = "Deny"
)

// GateWindow is a recurring time window.
//
// Starts are local clock times in timeZone, so a daily 09:00 window opens at 09:00 local time on both sides
// of a daylight-saving change. A window covers the local clock span from its start to start+duration.
// A start or end the clocks skip (spring forward) happens at the moment the clocks jump, and a window whose whole span is skipped does not open that day.
// A start or end the clocks show twice (fall back) happens the first time the clock shows it.
//
// So in elapsed time a window across the skipped hour is an hour shorter, and one across the repeated
// hour an hour longer, while a daily 00:00 window of 24h stays open through both changes.
type GateWindow struct {
	// Schedule is a cron expression with five fields, read in timeZone:
	// minute hour day-of-month month day-of-week, separated by spaces (day-of-week 0-6, Sunday is 0; names like MON and JAN work).
	// @yearly, @monthly, @weekly, @daily and @hourly are accepted too. Each match starts the window.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^ *(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+) *$')",message="schedule must have five fields (minute hour day-of-month month day-of-week) or be one of @yearly, @monthly, @weekly, @daily, @hourly; put the time zone in timeZone"
	Schedule string `json:"schedule"`

	// Duration is how long the window stays active after each start, in local clock time, e.g. "2h" or "62h".
	// It must be positive and at most 8784h (a leap year). A window longer than the gap between its starts
	// merges with the next one.
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('8784h')",message="duration must be positive and at most 8784h, for example 2h or 90m"
	Duration metav1.Duration `json:"duration"`

	// TimeZone is an IANA time zone name such as "Europe/London" or "America/New_York".
	// +kubebuilder:default=UTC
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self != 'Local'",message="timeZone must be an IANA name such as Europe/London; Local depends on the machine"
	// +optional
	TimeZone string `json:"timeZone,omitempty"`

	// Kind says what the window does: open (an allowed window) or closed (a freeze).
	// +kubebuilder:validation:Enum=open;closed
	Kind GateState `json:"kind"`

	// Description names the window in status messages, e.g. "No Deploy Friday".
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Description string `json:"description,omitempty"`
}

// GateOverride sets the state of a gate until a time.
type GateOverride struct {
	// State is the state the override sets.
	State GateState `json:"state"`

	// Until is when the override expires (RFC 3339, e.g. "2025-03-10T09:00:00Z").
	// +kubebuilder:validation:XValidation:rule="self > timestamp('0001-01-01T00:00:00Z')",message="until must be a real time such as 2025-03-10T09:00:00Z; the zero time 0001-01-01T00:00:00Z is not an expiry"
	Until metav1.Time `json:"until"`

	// Message says why, e.g. "hotfix for INC-123".
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Message string `json:"message,omitempty"`

	// Replaces is what the override replaced when it was set, restored when it expires.
	// +optional
	Replaces *GateReplaced `json:"replaces,omitempty"`
}

// GateReplaced is the state an override replaced, to which the gate returns when it expires.
type GateReplaced struct {
	// Closed is true when the override was set on a gate closed by hand (spec.closed: true): the
	// override is a bypass of the manual close, so it beats spec.closed until it expires, and then
	// the gate is closed by hand again. To end a bypass early, remove the override
	// (`kubectl gate close NAME` does).
	// +optional
	Closed bool `json:"closed,omitempty"`

	// Overrides are the overrides that were in force when this one was set, newest first. When
	// this override expires, the first of them that has not expired applies again until its own
	// expiry, so `close --for 8000h` and then `open --for 1m` is closed again after the minute.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	Overrides []GateOverrideState `json:"overrides,omitempty"`
}

// GateOverrideState is an override that another override replaced.
type GateOverrideState struct {
	// State is the state the override sets.
	State GateState `json:"state"`

	// Until is when the override expires.
	// +kubebuilder:validation:XValidation:rule="self > timestamp('0001-01-01T00:00:00Z')",message="until must be a real time such as 2025-03-10T09:00:00Z; the zero time 0001-01-01T00:00:00Z is not an expiry"
	Until metav1.Time `json:"until"`

	// Message says why.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Message string `json:"message,omitempty"`
}

// GateTransition is one change of the effective state.
type GateTransition struct {
	// Time is when the state changed.
	Time metav1.Time `json:"time"`
	// State is the state the gate changed to.
	State GateState `json:"state"`
	// Reason is the rule that decided it: Manual, Override, Window, Default, Suspended or Invalid.
	Reason string `json:"reason"`
	// Message explains the change.
	// +optional
	Message string `json:"message,omitempty"`
}

// HeldObject is an object the gate currently holds.
type HeldObject struct {
	// APIVersion of the held object, e.g. kustomize.toolkit.fluxcd.io/v1.
	APIVersion string `json:"apiVersion"`
	// Kind of the held object, e.g. Kustomization.
	Kind string `json:"kind"`
	// Namespace of the held object; empty for cluster-scoped objects.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the held object.
	Name string `json:"name"`
}

// GateStatus is the observed state of a Gate.
type GateStatus struct {
	// ObservedGeneration is the last metadata.generation the controller acted on.
	// Readers treat a gate whose observedGeneration differs from its generation as not yet evaluated.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions follow kstatus: Ready, Reconciling and Stalled (bad input), plus Open, which is True while the gate is open.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Open is the effective state.
	// +optional
	Open bool `json:"open"`

	// Reason is the rule that decided the state: Manual, Override, Window, Default, Suspended or Invalid.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message explains the state in words, e.g. which window closed the gate and until when.
	// +optional
	Message string `json:"message,omitempty"`

	// LastTransitionTime is when the effective state last changed.
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`

	// NextTransitionTime is when the effective state will change next if the spec stays as it is.
	// Empty when no window or override will change it.
	// +optional
	NextTransitionTime *metav1.Time `json:"nextTransitionTime,omitempty"`

	// History holds the latest transitions, newest first.
	// +kubebuilder:validation:MaxItems=20
	// +listType=atomic
	// +optional
	History []GateTransition `json:"history,omitempty"`

	// Holding is how many objects the gate currently holds. It is always written, so the
	// HOLDING column reads 0 rather than blank.
	// +optional
	Holding int32 `json:"holding"`

	// Held lists objects the gate currently holds, at most 50 of them; holding has the full count.
	// +kubebuilder:validation:MaxItems=50
	// +listType=atomic
	// +optional
	Held []HeldObject `json:"held,omitempty"`

	// Approvals are the revisions spec.approvals lets through while the gate is closed, without
	// those that have expired: what, who approved it and when, and until when.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Approvals []GateApproval `json:"approvals,omitempty"`

	// Approved summarises status.approvals for kubectl get: the approved revisions, shortened.
	// +optional
	Approved string `json:"approved,omitempty"`

	// ExpiredOverride is the override in spec that has expired and no longer affects the gate.
	// It is reported until spec.override is removed or replaced.
	// +optional
	ExpiredOverride *GateOverride `json:"expiredOverride,omitempty"`
}

// Gate freezes or approves delivery for the objects that reference it through the
// gating.sluice.dev/gates annotation. It is closed by hand (spec.closed), by a closed time window,
// outside its open windows, or by an override; see spec for the order of the rules.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gt,categories=sluice
// +kubebuilder:printcolumn:name="Open",type=boolean,JSONPath=`.status.open`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`
// +kubebuilder:printcolumn:name="Next Change",type=string,JSONPath=`.status.nextTransitionTime`
// +kubebuilder:printcolumn:name="Holding",type=integer,JSONPath=`.status.holding`
// +kubebuilder:printcolumn:name="Approved",type=string,JSONPath=`.status.approved`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`,priority=1
type Gate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec GateSpec `json:"spec,omitempty"`
	// +optional
	Status GateStatus `json:"status,omitempty"`
}

// GateList is a list of Gates.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type GateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gate `json:"items"`
}
