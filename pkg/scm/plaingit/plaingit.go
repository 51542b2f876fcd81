// Package plaingit is the provider for plain git hosting without an SCM API, registered as "git".
//
// With plain git, pull requests exist only as Sluice PullRequest objects (the promoter merges
// with go-git) and commit statuses only as CommitStatus objects in the cluster. Every SCM call
// therefore returns an error for which scm.IsUnsupported is true, and Capabilities reports no
// capability, so controllers branch before calling.
package plaingit

import (
	"context"
	"net/http"

	"github.com/sluicehq/sluice/pkg/scm"
)

// Name is the registered provider name.
const Name = "git"

func init() {
	scm.MustRegister(Name, New)
}

// Provider is the plain git provider. It holds no state and needs no credentials: git transport
// credentials belong to the ScmRepository.
type Provider struct{}

var _ scm.Provider = Provider{}

// New returns the provider. The config is not used.
func New(scm.Config) (scm.Provider, error) { return Provider{}, nil }

// Type implements scm.Provider.
func (Provider) Type() string { return Name }

// Capabilities implements scm.Provider: nothing reaches an SCM.
func (Provider) Capabilities() scm.Capabilities { return scm.Capabilities{} }

const (
	statusesInCluster = "the CommitStatus object is the status; promotions read it from the cluster"
	pullsInCluster    = "the PullRequest object is the pull request; the promoter merges it with git"
	noWebhooks        = "plain git sends no webhooks; Sluice polls the repository"
)

// SetCommitStatus implements scm.CommitStatuses.
func (Provider) SetCommitStatus(_ context.Context, _ scm.Repository, st scm.CommitStatus) (scm.CommitStatus, error) {
	return st, scm.Unsupported(Name, "set commit status", statusesInCluster)
}

// GetCommitStatus implements scm.CommitStatuses.
func (Provider) GetCommitStatus(context.Context, scm.Repository, string, string) (*scm.CommitStatus, error) {
	return nil, scm.Unsupported(Name, "get commit status", statusesInCluster)
}

// CreatePullRequest implements scm.PullRequests.
func (Provider) CreatePullRequest(context.Context, scm.Repository, scm.NewPullRequest) (*scm.PullRequest, error) {
	return nil, scm.Unsupported(Name, "create pull request", pullsInCluster)
}

// UpdatePullRequest implements scm.PullRequests.
func (Provider) UpdatePullRequest(context.Context, scm.Repository, int64, string, string) (*scm.PullRequest, error) {
	return nil, scm.Unsupported(Name, "update pull request", pullsInCluster)
}

// FindOpenPullRequest implements scm.PullRequests.
func (Provider) FindOpenPullRequest(context.Context, scm.Repository, string, string) (*scm.PullRequest, error) {
	return nil, scm.Unsupported(Name, "find pull request", pullsInCluster)
}

// GetPullRequest implements scm.PullRequests.
func (Provider) GetPullRequest(context.Context, scm.Repository, int64) (*scm.PullRequest, error) {
	return nil, scm.Unsupported(Name, "get pull request", pullsInCluster)
}

// MergePullRequest implements scm.PullRequests.
func (Provider) MergePullRequest(context.Context, scm.Repository, int64, scm.MergeOptions) (*scm.MergeResult, error) {
	return nil, scm.Unsupported(Name, "merge pull request", pullsInCluster)
}

// ClosePullRequest implements scm.PullRequests.
func (Provider) ClosePullRequest(context.Context, scm.Repository, int64) error {
	return scm.Unsupported(Name, "close pull request", pullsInCluster)
}

// VerifyWebhook implements scm.Webhooks.
func (Provider) VerifyWebhook(http.Header, []byte) error {
	return scm.Unsupported(Name, "verify webhook", noWebhooks)
}

// ParseWebhook implements scm.Webhooks.
func (Provider) ParseWebhook(http.Header, []byte) (*scm.Event, error) {
	return nil, scm.Unsupported(Name, "parse webhook", noWebhooks)
}
