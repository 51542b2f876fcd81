package promotionstrategy

// FieldManager is the field manager of every write.
const FieldManager = "promoter-controller"

// Event reasons.
const (
	// EventPromotionStarted: the controller asked for an environment's pull request to be merged.
	EventPromotionStarted = "PromotionStarted"
	// EventPromotionBlocked: what holds an environment's proposed change is new or changed.
	EventPromotionBlocked = "PromotionBlocked"
	// EventPromotionHeldAfterRollback: a revert (RevertCommit) holds an environment's proposed change.
	EventPromotionHeldAfterRollback = "PromotionHeldAfterRollback"
	// EventPromotionCompleted: an environment's pull request was merged.
	EventPromotionCompleted = "PromotionCompleted"
	// EventPullRequestMergedExternally: a person merged an environment's pull request outside Sluice.
	EventPullRequestMergedExternally = "PullRequestMergedExternally"
)

// Condition reasons. Ready is True only with ReasonPromoted.
const (
	// ReasonPromoted: no environment has a change left to promote.
	ReasonPromoted = "Promoted"
	// ReasonPromoting: a merge the controller asked for is under way (Reconciling=True).
	ReasonPromoting = "Promoting"
	// ReasonBlocked: a rule, check, gate or rollback holds a proposed change.
	ReasonBlocked = "Blocked"
	// ReasonWaitingForMerge: an eligible change waits for a person to merge it (autoMerge false).
	ReasonWaitingForMerge = "WaitingForMerge"
	// ReasonInvalidConfiguration: the spec, or an object it names, must be fixed (Stalled=True).
	// It is also the reason of the Warning Event that announces it.
	ReasonInvalidConfiguration = "InvalidConfiguration"
	// ReasonPromotionFailed: the last attempt failed and is retried.
	ReasonPromotionFailed = "PromotionFailed"
)

// ProposedCommit Ready reasons.
const (
	// ReasonUpToDate: nothing is proposed.
	ReasonUpToDate = "UpToDate"
	// ReasonEligible: the proposed change may be merged.
	ReasonEligible = "Eligible"
)
