package pullrequest

// FieldManager is the field manager of every write.
const FieldManager = "promoter-controller"

// Condition reasons.
const (
	// ReasonOpen: the pull request is open and waits.
	ReasonOpen = "Open"
	// ReasonMerged: the pull request is merged.
	ReasonMerged = "Merged"
	// ReasonClosed: the pull request was closed without merging.
	ReasonClosed = "Closed"
	// ReasonHeadMoved: the source branch moved away from spec.expectedHeadSHA; nothing is merged
	// until the new head is checked.
	ReasonHeadMoved = "HeadMoved"
	// ReasonBaseMoved: the target branch moved away from spec.expectedBaseSHA; nothing is merged,
	// and the pull request's creator decides what to do on the new target.
	ReasonBaseMoved = "BaseMoved"
	// ReasonMergedOnMovedBase: an SCM that cannot guard the base merged after the target moved
	// in the moment between the check and the merge call (Ready=True, with a warning message).
	ReasonMergedOnMovedBase = "MergedOnMovedBase"
	// ReasonNotMergeableYet: the SCM refused the merge for now (checks running, mergeability not
	// computed yet); it is tried again soon.
	ReasonNotMergeableYet = "NotMergeableYet"
	// ReasonFailed: the last attempt failed and is retried.
	ReasonFailed = "Failed"
	// ReasonSCMRefused: the SCM refused for good (Stalled=True).
	ReasonSCMRefused = "SCMRefused"
	// ReasonInvalidConfiguration: the repository or provider named must be fixed (Stalled=True).
	ReasonInvalidConfiguration = "InvalidConfiguration"
)
