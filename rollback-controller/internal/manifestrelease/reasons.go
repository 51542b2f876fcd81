package manifestrelease

// FieldManager writes ManifestRelease status and every object a release applies.
const FieldManager = "rollback-controller"

// Condition reasons and Event reasons.
const (
	ReasonInvalidSpec        = "InvalidSpec"
	ReasonSourceNotFound     = "SourceNotFound"
	ReasonSourceUnavailable  = "SourceUnavailable"
	ReasonNoManifests        = "NoManifests"
	ReasonInvalidManifests   = "InvalidManifests"
	ReasonSnapshotTooLarge   = "SnapshotTooLarge"
	ReasonUpgrading          = "Upgrading"
	ReasonRollingBack        = "RollingBack"
	ReasonDeployed           = "Deployed"
	ReasonUpgradeSucceeded   = "UpgradeSucceeded"
	ReasonUpgradeFailed      = "UpgradeFailed"
	ReasonInstallFailed      = "InstallFailed"
	ReasonRolledBack         = "RolledBack"
	ReasonRolledBackByHand   = "RolledBackByHand"
	ReasonRollbackFailed     = "RollbackFailed"
	ReasonRollbackRefused    = "RollbackRefused"
	ReasonHeld               = "VersionHeld"
	ReasonTestsPassed        = "TestsPassed"
	ReasonTestFailed         = "TestFailed"
	ReasonTestsNotRun        = "TestsNotRun"
	ReasonResumed            = "OperationResumed"
	ReasonPruneFailed        = "PruneFailed"
	ReasonSnapshotMissing    = "SnapshotMissing"
	ReasonApplyFailed        = "ApplyFailed"
	ReasonHealthCheckFailed  = "HealthCheckFailed"
	ReasonUpgradeStarted     = "UpgradeStarted"
	ReasonManualRollbackDone = "ManualRollback"
)

// ReasonForbidden is an operation the identity a release acts as may not carry out, or a
// ServiceAccount the controller may not impersonate.
const ReasonForbidden = "Forbidden"

// ReasonSnapshotNameTaken is a snapshot Secret name held by a Secret this release did not write.
const ReasonSnapshotNameTaken = "SnapshotNameTaken"
