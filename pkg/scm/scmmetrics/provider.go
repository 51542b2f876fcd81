package scmmetrics

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/pkg/scm"
)

// Instrument returns p with every SCM call counted and timed under the ScmProvider named
// provider. Webhook verification and parsing are local work and are not measured.
func (m *Metrics) Instrument(p scm.Provider, provider string) scm.Provider {
	return &instrumented{Provider: p, m: m, provider: provider, typ: p.Type()}
}

type instrumented struct {
	scm.Provider
	m        *Metrics
	provider string
	typ      string
}

func (i *instrumented) observe(op string, start time.Time, err error) {
	i.m.Observe(i.provider, i.typ, op, start, err)
}

func (i *instrumented) SetCommitStatus(ctx context.Context, repo scm.Repository, st scm.CommitStatus) (out scm.CommitStatus, err error) {
	defer func(start time.Time) { i.observe(OpSetCommitStatus, start, err) }(time.Now())
	return i.Provider.SetCommitStatus(ctx, repo, st)
}

func (i *instrumented) GetCommitStatus(ctx context.Context, repo scm.Repository, sha, name string) (out *scm.CommitStatus, err error) {
	defer func(start time.Time) { i.observe(OpGetCommitStatus, start, err) }(time.Now())
	return i.Provider.GetCommitStatus(ctx, repo, sha, name)
}

func (i *instrumented) CreatePullRequest(ctx context.Context, repo scm.Repository, pr scm.NewPullRequest) (out *scm.PullRequest, err error) {
	defer func(start time.Time) { i.observe(OpCreatePullRequest, start, err) }(time.Now())
	return i.Provider.CreatePullRequest(ctx, repo, pr)
}

func (i *instrumented) UpdatePullRequest(ctx context.Context, repo scm.Repository, number int64, title, body string) (out *scm.PullRequest, err error) {
	defer func(start time.Time) { i.observe(OpUpdatePullRequest, start, err) }(time.Now())
	return i.Provider.UpdatePullRequest(ctx, repo, number, title, body)
}

func (i *instrumented) FindOpenPullRequest(ctx context.Context, repo scm.Repository, head, base string) (out *scm.PullRequest, err error) {
	defer func(start time.Time) { i.observe(OpFindOpenPullRequest, start, err) }(time.Now())
	return i.Provider.FindOpenPullRequest(ctx, repo, head, base)
}

func (i *instrumented) GetPullRequest(ctx context.Context, repo scm.Repository, number int64) (out *scm.PullRequest, err error) {
	defer func(start time.Time) { i.observe(OpGetPullRequest, start, err) }(time.Now())
	return i.Provider.GetPullRequest(ctx, repo, number)
}

func (i *instrumented) MergePullRequest(ctx context.Context, repo scm.Repository, number int64, opts scm.MergeOptions) (out *scm.MergeResult, err error) {
	defer func(start time.Time) { i.observe(OpMergePullRequest, start, err) }(time.Now())
	return i.Provider.MergePullRequest(ctx, repo, number, opts)
}

func (i *instrumented) ClosePullRequest(ctx context.Context, repo scm.Repository, number int64) (err error) {
	defer func(start time.Time) { i.observe(OpClosePullRequest, start, err) }(time.Now())
	return i.Provider.ClosePullRequest(ctx, repo, number)
}

// ListCommitStatuses passes the read on when the provider is an scm.StatusReader; plain git is
// not, and answers unsupported.
func (i *instrumented) ListCommitStatuses(ctx context.Context, repo scm.Repository, sha string) (out []scm.ReadStatus, err error) {
	reader, ok := i.Provider.(scm.StatusReader)
	if !ok {
		return nil, scm.NewError(i.typ, "list commit statuses", scm.KindUnsupported, 0,
			"this provider keeps no commit statuses of its own to read", nil)
	}
	defer func(start time.Time) { i.observe(OpListCommitStatuses, start, err) }(time.Now())
	return reader.ListCommitStatuses(ctx, repo, sha)
}
