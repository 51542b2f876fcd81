package scm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
)

// Kind classifies an SCM failure by what a controller should do about it.
type Kind int

const (
	// KindTransient: 5xx, network trouble or a timeout. Retry with backoff.
	KindTransient Kind = iota
	// KindRateLimited: the SCM (or the client-side limiter) said stop. Retry after RetryAfter.
	KindRateLimited
	// KindUnauthorized: 401, the credentials were rejected. Permanent.
	KindUnauthorized
	// KindForbidden: 403 that is not a rate limit, the credentials lack a permission. Permanent.
	KindForbidden
	// KindNotFound: 404, or a repository the credentials cannot see. Permanent.
	KindNotFound
	// KindInvalid: 400/422 or input refused before sending. Permanent.
	KindInvalid
	// KindConflict: 409 other than a moved head. Re-read, then retry.
	KindConflict
	// KindHeadMoved: the pull request head is no longer the expected commit. Re-read, do not retry as is.
	KindHeadMoved
	// KindNotMergeable: the SCM refuses the merge (conflicts, required checks, closed). Wait for a change.
	KindNotMergeable
	// KindUnsupported: the provider has no such operation (plain git). Handle it in-cluster. Permanent.
	KindUnsupported
)

var kindNames = map[Kind]string{
	KindTransient:    "transient",
	KindRateLimited:  "rate_limited",
	KindUnauthorized: "unauthorized",
	KindForbidden:    "forbidden",
	KindNotFound:     "not_found",
	KindInvalid:      "invalid",
	KindConflict:     "conflict",
	KindHeadMoved:    "head_moved",
	KindNotMergeable: "not_mergeable",
	KindUnsupported:  "unsupported",
}

// String is a stable, lower-case name suitable as a metric label.
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Permanent reports whether retrying the same call cannot succeed until a person changes something.
func (k Kind) Permanent() bool {
	switch k {
	case KindUnauthorized, KindForbidden, KindNotFound, KindInvalid, KindUnsupported:
		return true
	}
	return false
}

// Error is a classified SCM failure. Its message names the provider, the operation and what to
// do, and never contains credentials.
type Error struct {
	Provider string
	// Op is what was being done, such as "set commit status on acme/app@1a2b3c4".
	Op   string
	Kind Kind
	// StatusCode is the HTTP status, or 0 when no response arrived.
	StatusCode int
	// RetryAfter is set for KindRateLimited when the SCM said how long to wait.
	RetryAfter time.Duration
	// Message is the redacted explanation.
	Message string
	cause   error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Provider, e.Op, e.Message)
}

// Unwrap gives errors.Is/As access to the cause (context errors, *ratelimit.PausedError, SDK
// errors). Its text is not part of Error() and may not be redacted: log Error(), not the cause.
func (e *Error) Unwrap() error { return e.cause }

// KindOf returns the Kind of an *Error in err's chain, or KindTransient for unclassified errors.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	if _, ok := ratelimit.IsPaused(err); ok {
		return KindRateLimited
	}
	return KindTransient
}

// IsPermanent reports errors that retrying cannot fix: bad credentials (401), missing permission
// (403), unknown repository or commit (404), invalid input (400/422), unsupported operation.
func IsPermanent(err error) bool { return err != nil && KindOf(err).Permanent() }

// IsRateLimited reports errors caused by a rate limit.
func IsRateLimited(err error) bool { return err != nil && KindOf(err) == KindRateLimited }

// IsNotFound reports 404s.
func IsNotFound(err error) bool { return err != nil && KindOf(err) == KindNotFound }

// IsHeadMoved reports a merge refused because the head is no longer the expected commit.
func IsHeadMoved(err error) bool { return err != nil && KindOf(err) == KindHeadMoved }

// IsNotMergeable reports a merge the SCM refuses for reasons other than a moved head.
func IsNotMergeable(err error) bool { return err != nil && KindOf(err) == KindNotMergeable }

// IsUnsupported reports operations the provider does not have (plain git).
func IsUnsupported(err error) bool { return err != nil && KindOf(err) == KindUnsupported }

// RetryAfter returns how long to wait before retrying a rate-limited call, when known.
func RetryAfter(err error) (time.Duration, bool) {
	var e *Error
	if errors.As(err, &e) && e.Kind == KindRateLimited && e.RetryAfter > 0 {
		return e.RetryAfter, true
	}
	return ratelimit.IsPaused(err)
}

// Failure is what a provider knows about a failed call, for Classify.
type Failure struct {
	Provider string
	Op       string
	// Response is the HTTP response, when one arrived.
	Response *http.Response
	// ServerMessage is the SCM's own explanation, when it gave one.
	ServerMessage string
	// Err is the underlying error.
	Err error
}

// Classify turns a failed call into an *Error with an actionable, redacted message.
func Classify(f Failure, r *Redactor) *Error {
	e := &Error{Provider: f.Provider, Op: f.Op, cause: f.Err}
	server := strings.TrimSpace(r.String(f.ServerMessage))
	withServer := func(msg string) string {
		if server == "" {
			return msg
		}
		return msg + " (the SCM said: " + server + ")"
	}

	if wait, ok := ratelimit.IsPaused(f.Err); ok {
		e.Kind, e.RetryAfter = KindRateLimited, wait
		e.Message = fmt.Sprintf("rate limited: requests to this SCM are paused for %s; no request was sent, retry later",
			wait.Round(time.Second))
		return e
	}
	if f.Response == nil {
		switch {
		case errors.Is(f.Err, context.Canceled):
			e.Kind, e.Message = KindTransient, "cancelled"
		case errors.Is(f.Err, context.DeadlineExceeded):
			e.Kind, e.Message = KindTransient, "timed out waiting for the SCM; will retry"
		default:
			e.Kind = KindTransient
			e.Message = "could not reach the SCM: " + r.String(errString(f.Err)) + "; check baseURL, DNS, the network and the CA bundle"
		}
		return e
	}

	code := f.Response.StatusCode
	e.StatusCode = code
	now := time.Now()
	switch {
	case code == http.StatusTooManyRequests || isRateLimit403(f.Response):
		e.Kind = KindRateLimited
		e.RetryAfter = retryAfterFromHeaders(f.Response.Header, now)
		e.Message = fmt.Sprintf("rate limited by the SCM (%d)", code)
		if e.RetryAfter > 0 {
			e.Message += fmt.Sprintf("; retry after %s", e.RetryAfter.Round(time.Second))
		}
	case code == http.StatusUnauthorized:
		e.Kind = KindUnauthorized
		e.Message = withServer("the SCM rejected the credentials (401): check the token or GitHub App key " +
			"in the ScmProvider's Secret, and that it has not expired or been revoked")
	case code == http.StatusForbidden:
		e.Kind = KindForbidden
		e.Message = withServer("the credentials lack permission for this (403): grant the token or App " +
			"write access to commit statuses and pull requests of the repository")
	case code == http.StatusNotFound:
		e.Kind = KindNotFound
		e.Message = withServer("not found (404): check the ScmRepository's owner and name, the commit or " +
			"pull request, and that the credentials can see the repository (private repositories answer 404)")
	case code == http.StatusBadRequest || code == http.StatusUnprocessableEntity:
		e.Kind = KindInvalid
		e.Message = withServer(fmt.Sprintf("the SCM refused the request as invalid (%d)", code))
	case code == http.StatusConflict:
		e.Kind = KindConflict
		e.Message = withServer("conflict (409): the object changed on the SCM; it will be read again")
	case code >= 500:
		e.Kind = KindTransient
		e.Message = withServer(fmt.Sprintf("the SCM failed (%d); will retry", code))
	default:
		e.Kind = KindTransient
		e.Message = withServer(fmt.Sprintf("unexpected answer %d from the SCM", code))
	}
	return e
}

func errString(err error) string {
	if err == nil {
		return "no error detail"
	}
	return err.Error()
}

func isRateLimit403(resp *http.Response) bool {
	if resp.StatusCode != http.StatusForbidden {
		return false
	}
	h := resp.Header
	if h.Get("Retry-After") != "" {
		return true
	}
	for _, n := range []string{"X-RateLimit-Remaining", "RateLimit-Remaining"} {
		if strings.TrimSpace(h.Get(n)) == "0" {
			return true
		}
	}
	return false
}

func retryAfterFromHeaders(h http.Header, now time.Time) time.Duration {
	if d, ok := ratelimit.RetryAfter(h, now); ok {
		return d
	}
	if d, ok := ratelimit.ResetAfter(h, now); ok {
		return d
	}
	return 0
}

// Unsupported returns the error plain git gives for SCM operations it does not have.
func Unsupported(provider, op, inCluster string) *Error {
	return &Error{
		Provider: provider,
		Op:       op,
		Kind:     KindUnsupported,
		Message:  "not supported by plain git; handled in-cluster: " + inCluster,
	}
}

// Invalid returns the error for input refused before any request was sent.
func Invalid(provider, op string, err error) *Error {
	return &Error{Provider: provider, Op: op, Kind: KindInvalid, Message: err.Error(), cause: err}
}

// NewError builds an *Error of a given kind, for provider-specific outcomes (a moved head, a
// refused merge) that status codes alone do not tell apart.
func NewError(provider, op string, kind Kind, statusCode int, message string, cause error) *Error {
	return &Error{Provider: provider, Op: op, Kind: kind, StatusCode: statusCode, Message: message, cause: cause}
}
