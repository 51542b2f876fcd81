package scm

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/sluicehq/sluice/pkg/scm/webhook"
)

// EventKind is the kind of a webhook delivery.
type EventKind string

const (
	EventPush        EventKind = "push"
	EventPullRequest EventKind = "pull_request"
	// EventPing is the SCM checking that the hook works.
	EventPing EventKind = "ping"
	// EventCommitStatus is a commit status, check run or pipeline that was set or changed on a
	// commit (GitHub status, check_run and check_suite; Gitea status; GitLab pipeline and job).
	EventCommitStatus EventKind = "commit_status"
	// EventIgnored is any event Sluice does not use.
	EventIgnored EventKind = "ignored"
)

// Event is a provider-neutral webhook delivery.
type Event struct {
	Kind EventKind
	// Provider is the registered provider name.
	Provider string
	// Type is the SCM's own event name, such as "pull_request" or "Merge Request Hook".
	Type string
	// Repository the event happened in (empty for pings without one).
	Repository  Repository
	Push        *PushEvent
	PullRequest *PullRequestEvent
	// CommitStatus is set for EventCommitStatus.
	CommitStatus *CommitStatusEvent
}

// CommitStatusEvent names the commit whose statuses changed. Its statuses are read from the SCM
// API rather than taken from the payload: a delivery says "look again", the API says what is true.
type CommitStatusEvent struct {
	SHA string
	// Name is the status context, check run or job name, when the payload has one.
	Name string
}

// PushEvent is a push to a branch or tag.
type PushEvent struct {
	// Ref is the full ref, such as refs/heads/main.
	Ref string
	// Branch is Ref without refs/heads/, or empty for tags.
	Branch string
	Before string
	After  string
	// Deleted is true when the ref was deleted.
	Deleted bool
}

// PullRequestAction says what happened to a pull request.
type PullRequestAction string

const (
	ActionOpened   PullRequestAction = "opened"
	ActionReopened PullRequestAction = "reopened"
	// ActionSynchronized means the head branch moved.
	ActionSynchronized PullRequestAction = "synchronized"
	ActionEdited       PullRequestAction = "edited"
	// ActionClosed means closed without merging.
	ActionClosed PullRequestAction = "closed"
	ActionMerged PullRequestAction = "merged"
	ActionOther  PullRequestAction = "other"
)

// PullRequestEvent is a change to a pull request (merge request).
type PullRequestEvent struct {
	Action      PullRequestAction
	PullRequest PullRequest
}

// ReadWebhookBody reads a delivery's body with a size limit (webhook.DefaultMaxBodyBytes when
// maxBytes <= 0).
func ReadWebhookBody(r *http.Request, maxBytes int64) ([]byte, error) {
	return webhook.ReadBody(r, maxBytes)
}

// ErrMalformedWebhook wraps the error of a delivery that is signed correctly but whose payload
// cannot be read: the sender, not the secret, is at fault.
var ErrMalformedWebhook = errors.New("malformed webhook payload")

// ReceiveWebhook reads, verifies and parses one delivery. A delivery that is too large or not
// signed with the configured secret is refused before its payload is parsed; one that is signed
// but cannot be parsed returns an error wrapping ErrMalformedWebhook.
func ReceiveWebhook(p Webhooks, r *http.Request, maxBytes int64) (*Event, error) {
	body, err := webhook.ReadBody(r, maxBytes)
	if err != nil {
		return nil, err
	}
	if err := p.VerifyWebhook(r.Header, body); err != nil {
		return nil, err
	}
	ev, err := p.ParseWebhook(r.Header, body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedWebhook, err)
	}
	return ev, nil
}

// BranchFromRef returns the branch of a refs/heads/ ref, or "" for other refs.
func BranchFromRef(ref string) string {
	const prefix = "refs/heads/"
	if len(ref) > len(prefix) && ref[:len(prefix)] == prefix {
		return ref[len(prefix):]
	}
	return ""
}

// ZeroSHA reports whether sha is git's all-zero id, which webhooks use for created or deleted refs.
func ZeroSHA(sha string) bool {
	if sha == "" {
		return false
	}
	for _, c := range sha {
		if c != '0' {
			return false
		}
	}
	return true
}
