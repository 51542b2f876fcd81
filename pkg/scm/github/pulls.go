package github

import (
	"context"
	"fmt"
	"net/http"
	"time"

	gh "github.com/google/go-github/v75/github"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/internal/opname"
)

var nowUTC = func() time.Time { return time.Now().UTC() }

// CreatePullRequest implements scm.PullRequests.
func (p *Provider) CreatePullRequest(c context.Context, repo scm.Repository, pr scm.NewPullRequest) (*scm.PullRequest, error) {
	op := fmt.Sprintf("create pull request %s -> %s in %s", pr.Head, pr.Base, repo)
	if err := repo.Validate(); err != nil {
		return nil, invalid(op, err)
	}
	if err := pr.Validate(); err != nil {
		return nil, invalid(op, err)
	}
	created, resp, err := p.client.PullRequests.Create(ctx(c), repo.Owner, repo.Name, &gh.NewPullRequest{
		Title: gh.Ptr(pr.Title),
		Head:  gh.Ptr(pr.Head),
		Base:  gh.Ptr(pr.Base),
		Body:  gh.Ptr(pr.Body),
	})
	if err != nil {
		return nil, p.fail(op, resp, err)
	}
	return fromGitHub(created), nil
}

// UpdatePullRequest implements scm.PullRequests.
func (p *Provider) UpdatePullRequest(c context.Context, repo scm.Repository, number int64, title, body string) (*scm.PullRequest, error) {
	op := opname.PullRequest("update", repo, number)
	if err := repo.Validate(); err != nil {
		return nil, invalid(op, err)
	}
	if title == "" {
		return nil, invalid(op, fmt.Errorf("pull request title is empty"))
	}
	updated, resp, err := p.client.PullRequests.Edit(ctx(c), repo.Owner, repo.Name, int(number), &gh.PullRequest{
		Title: gh.Ptr(title),
		Body:  gh.Ptr(body),
	})
	if err != nil {
		return nil, p.fail(op, resp, err)
	}
	return fromGitHub(updated), nil
}

// FindOpenPullRequest implements scm.PullRequests. GitHub filters by "owner:branch" heads, so
// only pull requests from a branch of the same repository are found.
func (p *Provider) FindOpenPullRequest(c context.Context, repo scm.Repository, head, base string) (*scm.PullRequest, error) {
	op := fmt.Sprintf("find the open pull request %s -> %s in %s", head, base, repo)
	if err := repo.Validate(); err != nil {
		return nil, invalid(op, err)
	}
	prs, resp, err := p.client.PullRequests.List(ctx(c), repo.Owner, repo.Name, &gh.PullRequestListOptions{
		State:       "open",
		Head:        repo.Owner + ":" + head,
		Base:        base,
		ListOptions: gh.ListOptions{PerPage: 10},
	})
	if err != nil {
		return nil, p.fail(op, resp, err)
	}
	for _, pr := range prs {
		if pr.GetHead().GetRef() == head && pr.GetBase().GetRef() == base && pr.GetState() == "open" {
			return fromGitHub(pr), nil
		}
	}
	return nil, nil
}

// GetPullRequest implements scm.PullRequests.
func (p *Provider) GetPullRequest(c context.Context, repo scm.Repository, number int64) (*scm.PullRequest, error) {
	op := opname.PullRequest("get", repo, number)
	if err := repo.Validate(); err != nil {
		return nil, invalid(op, err)
	}
	pr, resp, err := p.client.PullRequests.Get(ctx(c), repo.Owner, repo.Name, int(number))
	if err != nil {
		return nil, p.fail(op, resp, err)
	}
	return fromGitHub(pr), nil
}

// MergePullRequest implements scm.PullRequests. GitHub enforces the expected head with the sha
// parameter and answers 409 when it moved.
func (p *Provider) MergePullRequest(c context.Context, repo scm.Repository, number int64, opts scm.MergeOptions) (*scm.MergeResult, error) {
	op := opname.PullRequest("merge", repo, number)
	if err := repo.Validate(); err != nil {
		return nil, invalid(op, err)
	}
	if err := opts.Validate(); err != nil {
		return nil, invalid(op, err)
	}
	method := string(opts.Method)
	if method == "" {
		method = string(scm.MergeMethodMerge)
	}
	result, resp, err := p.client.PullRequests.Merge(ctx(c), repo.Owner, repo.Name, int(number), opts.CommitMessage,
		&gh.PullRequestOptions{SHA: opts.ExpectedHeadSHA, MergeMethod: method, CommitTitle: opts.CommitTitle})
	if err == nil {
		if result.GetMerged() {
			return &scm.MergeResult{MergeCommitSHA: result.GetSHA()}, nil
		}
		return nil, scm.NewError(Name, op, scm.KindNotMergeable, resp.StatusCode,
			"GitHub did not merge: "+p.redactor.String(result.GetMessage()), nil)
	}
	refused, ok := p.fail(op, resp, err).(*scm.Error)
	if !ok {
		return nil, err
	}
	switch refused.StatusCode {
	case http.StatusConflict:
		return nil, scm.NewError(Name, op, scm.KindHeadMoved, refused.StatusCode, fmt.Sprintf(
			"the head of pull request #%d is no longer %s: read it again and check the new head before merging",
			number, opts.ExpectedHeadSHA), refused)
	case http.StatusMethodNotAllowed:
		// Not mergeable, or already merged: one read tells which.
		current, getErr := p.GetPullRequest(c, repo, number)
		if getErr != nil {
			current = nil
		}
		return scm.ExplainRefusedMerge(Name, op, current, opts.ExpectedHeadSHA, refused)
	}
	return nil, refused
}

// ClosePullRequest implements scm.PullRequests.
func (p *Provider) ClosePullRequest(c context.Context, repo scm.Repository, number int64) error {
	op := opname.PullRequest("close", repo, number)
	if err := repo.Validate(); err != nil {
		return invalid(op, err)
	}
	_, resp, err := p.client.PullRequests.Edit(ctx(c), repo.Owner, repo.Name, int(number), &gh.PullRequest{
		State: gh.Ptr("closed"),
	})
	if err != nil {
		return p.fail(op, resp, err)
	}
	return nil
}

func fromGitHub(pr *gh.PullRequest) *scm.PullRequest {
	out := &scm.PullRequest{
		Number:  int64(pr.GetNumber()),
		Title:   pr.GetTitle(),
		Body:    pr.GetBody(),
		Head:    pr.GetHead().GetRef(),
		Base:    pr.GetBase().GetRef(),
		HeadSHA: pr.GetHead().GetSHA(),
		URL:     pr.GetHTMLURL(),
		State:   scm.PullRequestOpen,
	}
	switch {
	case pr.GetMerged() || pr.MergedAt != nil:
		out.State = scm.PullRequestMerged
		out.MergeCommitSHA = pr.GetMergeCommitSHA()
	case pr.GetState() == "closed":
		out.State = scm.PullRequestClosed
	}
	return out
}
