package resolve

// Reasons of a failed resolution, used as condition reasons.
const (
	ReasonRepositoryNotFound = "ScmRepositoryNotFound"
	ReasonProviderNotFound   = "ScmProviderNotFound"
	ReasonUnsupportedType    = "UnsupportedProviderType"
	ReasonProviderInvalid    = "ScmProviderInvalid"
	ReasonSecretNotFound     = "SecretNotFound"
	ReasonSecretForbidden    = "SecretForbidden"
	ReasonSecretInvalid      = "SecretInvalid"
	ReasonCABundleInvalid    = "CABundleInvalid"
	ReasonLookupFailed       = "LookupFailed"
)

// Error is a failed resolution. Its Message says what to fix and never holds a credential.
type Error struct {
	// Reason is a CamelCase condition reason.
	Reason  string
	Message string
	// Transient errors (the API server failed) are retried with backoff; the others need a person.
	Transient bool
	// Unwatched is true when the fix belongs in a Secret or ConfigMap, which the controller does not
	// watch, so the CommitStatus must be checked again from time to time.
	Unwatched bool
}

func (e *Error) Error() string { return e.Reason + ": " + e.Message }
