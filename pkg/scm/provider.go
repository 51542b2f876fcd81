// Package scm is what Sluice needs from a source-control manager, behind one interface.
//
// Controllers ask for a Provider by name (scm.New("github", cfg)); providers register themselves
// with scm.Register, so a new SCM is added by adding a package, without touching a controller.
// The built-in providers live in the subpackages github, gitlab, gitea (also "forgejo") and
// plaingit ("git"); import pkg/scm/builtin to register them all.
//
// Security decisions, which every provider inherits from Config:
//   - Credentials arrive already read from a Secret (Credentials); they are never part of an
//     error message, and Credentials prints as [redacted].
//   - Base URLs must be https. http is accepted only for a loopback host and only when
//     Config.AllowInsecureLoopbackHTTP is set, for tests and local demos. URLs must not carry
//     credentials, a query or a fragment.
//   - TLS verification is always on. Config.CABundle adds trusted roots; it never replaces the check.
//   - Redirects that leave https are refused.
//
// Errors returned by providers are *Error values. IsPermanent tells a controller to stop retrying
// (and set Stalled); RetryAfter tells it when a rate-limited call may be tried again.
package scm

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
)

// Provider is everything Sluice needs from an SCM.
type Provider interface {
	// Type is the registered name of the provider, such as "github".
	Type() string
	// Capabilities says which operations reach the SCM, so controllers can branch (for example,
	// keep statuses in-cluster for plain git).
	Capabilities() Capabilities

	CommitStatuses
	PullRequests
	Webhooks
}

// Capabilities of a provider. An operation whose capability is false returns an error for
// which IsUnsupported is true.
type Capabilities struct {
	// CommitStatuses: statuses are written to and read from the SCM.
	CommitStatuses bool
	// ChecksAPI: statuses are written as GitHub check runs (GitHub App authentication).
	ChecksAPI bool
	// PullRequests: pull requests exist on the SCM.
	PullRequests bool
	// Webhooks: the SCM sends signed webhooks that this provider verifies and parses.
	Webhooks bool
}

// CommitStatuses sets and reads the status of a commit.
type CommitStatuses interface {
	// SetCommitStatus writes status and returns it with ProviderID filled in. When
	// status.ProviderID names a GitHub check run of the same SHA and name, that run is updated
	// instead of creating another.
	SetCommitStatus(ctx context.Context, repo Repository, status CommitStatus) (CommitStatus, error)
	// GetCommitStatus returns the latest status named name on sha, or nil when there is none.
	GetCommitStatus(ctx context.Context, repo Repository, sha, name string) (*CommitStatus, error)
}

// PullRequests manages pull requests (merge requests on GitLab).
type PullRequests interface {
	CreatePullRequest(ctx context.Context, repo Repository, pr NewPullRequest) (*PullRequest, error)
	// UpdatePullRequest sets the title and body.
	UpdatePullRequest(ctx context.Context, repo Repository, number int64, title, body string) (*PullRequest, error)
	// FindOpenPullRequest returns the open pull request from head to base, or nil when there is none.
	FindOpenPullRequest(ctx context.Context, repo Repository, head, base string) (*PullRequest, error)
	// GetPullRequest reads a pull request's state, head and URL.
	GetPullRequest(ctx context.Context, repo Repository, number int64) (*PullRequest, error)
	// MergePullRequest merges only if the head is still opts.ExpectedHeadSHA; the SCM enforces
	// it. A moved head gives an error for which IsHeadMoved is true. Merging a pull request that
	// was already merged at the expected head succeeds with AlreadyMerged set.
	MergePullRequest(ctx context.Context, repo Repository, number int64, opts MergeOptions) (*MergeResult, error)
	ClosePullRequest(ctx context.Context, repo Repository, number int64) error
}

// Webhooks verifies and parses webhook deliveries. Read the body with ReadWebhookBody (it
// enforces a size limit), or use ReceiveWebhook to do all three steps.
type Webhooks interface {
	// VerifyWebhook checks the delivery's signature (or token, on GitLab). It fails when no
	// webhook secret is configured: unsigned webhooks are never accepted.
	VerifyWebhook(header http.Header, body []byte) error
	// ParseWebhook turns a verified delivery into a provider-neutral Event. Events Sluice does not
	// use come back with Kind EventIgnored and no error.
	ParseWebhook(header http.Header, body []byte) (*Event, error)
}

// Repository identifies a repository on the SCM.
type Repository struct {
	// Owner is a user or organisation, or on GitLab a group path that may contain subgroups.
	Owner string
	// Name is the repository name, without .git.
	Name string
}

func (r Repository) String() string { return r.Owner + "/" + r.Name }

var (
	ownerPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$`)
	namePattern  = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	shaPattern   = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)
)

// Validate reports an owner or name that no SCM accepts, before any request is sent.
func (r Repository) Validate() error {
	if !ownerPattern.MatchString(r.Owner) || r.Owner == "." || r.Owner == ".." {
		return fmt.Errorf("repository owner %q is not valid: use letters, digits, '.', '_', '-' and '/' between group levels", r.Owner)
	}
	if !namePattern.MatchString(r.Name) || r.Name == "." || r.Name == ".." {
		return fmt.Errorf("repository name %q is not valid: use letters, digits, '.', '_' and '-'", r.Name)
	}
	return nil
}

// ValidateSHA reports a commit id that is not a full lowercase SHA-1 or SHA-256.
func ValidateSHA(sha string) error {
	if !shaPattern.MatchString(sha) {
		return fmt.Errorf("commit %q is not a full commit id (40 or 64 lowercase hex characters)", sha)
	}
	return nil
}

// StatusState is the verdict of a commit status.
type StatusState string

const (
	StatusPending StatusState = "pending"
	StatusSuccess StatusState = "success"
	StatusFailure StatusState = "failure"
)

// Valid reports whether s is one of the three states.
func (s StatusState) Valid() bool {
	return s == StatusPending || s == StatusSuccess || s == StatusFailure
}

// CommitStatus is one named status on one commit.
type CommitStatus struct {
	SHA string
	// Name is the status context (GitHub, Gitea), name (GitLab) or check run name (GitHub App).
	Name        string
	State       StatusState
	Description string
	// TargetURL links to details.
	TargetURL string
	// ProviderID is the SCM's id of the status or check run.
	ProviderID string
}

// Validate reports a status that no SCM would accept.
func (s CommitStatus) Validate() error {
	if err := ValidateSHA(s.SHA); err != nil {
		return err
	}
	if s.Name == "" {
		return fmt.Errorf("commit status name is empty: give the check a short name such as ci/health")
	}
	if !s.State.Valid() {
		return fmt.Errorf("commit status state %q is not one of pending, success, failure", s.State)
	}
	return nil
}

// PullRequestState is open, closed or merged.
type PullRequestState string

const (
	PullRequestOpen   PullRequestState = "open"
	PullRequestClosed PullRequestState = "closed"
	PullRequestMerged PullRequestState = "merged"
)

// PullRequest is a pull request (a merge request on GitLab).
type PullRequest struct {
	// Number is the pull request number (the MR iid on GitLab).
	Number int64
	Title  string
	Body   string
	// Head and Base are branch names.
	Head    string
	Base    string
	HeadSHA string
	State   PullRequestState
	// URL is the page people open in a browser.
	URL string
	// MergeCommitSHA is set once merged.
	MergeCommitSHA string
}

// NewPullRequest is what CreatePullRequest needs.
type NewPullRequest struct {
	Title string
	Body  string
	// Head is the branch with the changes; Base the branch to merge into.
	Head string
	Base string
}

// Validate reports a pull request no SCM would accept.
func (p NewPullRequest) Validate() error {
	switch {
	case p.Title == "":
		return fmt.Errorf("pull request title is empty")
	case p.Head == "" || p.Base == "":
		return fmt.Errorf("pull request needs both a head and a base branch (head %q, base %q)", p.Head, p.Base)
	case p.Head == p.Base:
		return fmt.Errorf("pull request head and base are the same branch %q", p.Head)
	}
	return nil
}

// MergeMethod is how a pull request is merged.
type MergeMethod string

const (
	MergeMethodMerge  MergeMethod = "merge"
	MergeMethodSquash MergeMethod = "squash"
	MergeMethodRebase MergeMethod = "rebase"
)

// MergeOptions for MergePullRequest.
type MergeOptions struct {
	// ExpectedHeadSHA is required: the merge happens only if the head is still this commit.
	ExpectedHeadSHA string
	// ExpectedBaseSHA, when set, is the base commit the head was written on, to be merged only
	// onto it. Gitea guards it itself: the merge is asked as fast-forward-only, which fails when
	// the base moved. GitHub and GitLab take no such guard in their merge calls: the caller checks
	// the base right before and right after the call (see docs/architecture.md).
	ExpectedBaseSHA string
	// Method defaults to merge.
	Method MergeMethod
	// CommitTitle and CommitMessage override the SCM's default merge commit message.
	CommitTitle   string
	CommitMessage string
}

// Validate reports options that would merge without the head guard.
func (o MergeOptions) Validate() error {
	if err := ValidateSHA(o.ExpectedHeadSHA); err != nil {
		return fmt.Errorf("merge needs the expected head commit: %w", err)
	}
	if o.ExpectedBaseSHA != "" {
		if err := ValidateSHA(o.ExpectedBaseSHA); err != nil {
			return fmt.Errorf("expected base commit: %w", err)
		}
	}
	switch o.Method {
	case "", MergeMethodMerge, MergeMethodSquash, MergeMethodRebase:
		return nil
	}
	return fmt.Errorf("merge method %q is not one of merge, squash, rebase", o.Method)
}

// MergeResult describes a successful merge.
type MergeResult struct {
	// MergeCommitSHA is the commit the merge created on the base branch, when the SCM reports it.
	MergeCommitSHA string
	// AlreadyMerged is true when the pull request had been merged (at the expected head) before
	// this call, for example by a previous attempt whose answer was lost.
	AlreadyMerged bool
}
