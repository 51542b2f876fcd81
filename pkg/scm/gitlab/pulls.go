package gitlab

import (
	"context"
	"fmt"
	"net/http"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/sluicehq/sluice/pkg/scm"
)

func prOp(verb string, repo scm.Repository, number int64) string {
	return fmt.Sprintf("%s merge request !%d in %s", verb, number, repo)
}

// CreatePullRequest implements scm.PullRequests with a merge request.
func (p *Provider) CreatePullRequest(c context.Context, repo scm.Repository, pr scm.NewPullRequest) (*scm.PullRequest, error) {
	op := fmt.Sprintf("create merge request %s -> %s in %s", pr.Head, pr.Base, repo)
	if err := repo.Validate(); err != nil {
		return nil, invalid(op, err)
	}
	if err := pr.Validate(); err != nil {
		return nil, invalid(op, err)
	}
	mr, resp, err := p.client.MergeRequests.CreateMergeRequest(project(repo), &gl.CreateMergeRequestOptions{
		Title:        gl.Ptr(pr.Title),
		Description:  gl.Ptr(pr.Body),
		SourceBranch: gl.Ptr(pr.Head),
		TargetBranch: gl.Ptr(pr.Base),
	}, gl.WithContext(c))
	if err != nil {
		return nil, p.fail(op, resp, err)
	}
	return mergeRequestFromGitLab(&mr.BasicMergeRequest), nil
}

// UpdatePullRequest implements scm.PullRequests.
func (p *Provider) UpdatePullRequest(c context.Context, repo scm.Repository, number int64, title, body string) (*scm.PullRequest, error) {
	op := prOp("update", repo, number)
	if err := repo.Validate(); err != nil {
		return nil, invalid(op, err)
	}
	if title == "" {
		return nil, invalid(op, fmt.Errorf("merge request title is empty"))
	}
	mr, resp, err := p.client.MergeRequests.UpdateMergeRequest(project(repo), number, &gl.UpdateMergeRequestOptions{
		Title:       gl.Ptr(title),
		Description: gl.Ptr(body),
	}, gl.WithContext(c))
	if err != nil {
		return nil, p.fail(op, resp, err)
	}
	return mergeRequestFromGitLab(&mr.BasicMergeRequest), nil
}

// FindOpenPullRequest implements scm.PullRequests.
func (p *Provider) FindOpenPullRequest(c context.Context, repo scm.Repository, head, base string) (*scm.PullRequest, error) {
	op := fmt.Sprintf("find the open merge request %s -> %s in %s", head, base, repo)
	if err := repo.Validate(); err != nil {
		return nil, invalid(op, err)
	}
	mrs, resp, err := p.client.MergeRequests.ListProjectMergeRequests(project(repo), &gl.ListProjectMergeRequestsOptions{
		State:        gl.Ptr("opened"),
		SourceBranch: gl.Ptr(head),
		TargetBranch: gl.Ptr(base),
		ListOptions:  gl.ListOptions{PerPage: 10},
	}, gl.WithContext(c))
	if err != nil {
		return nil, p.fail(op, resp, err)
	}
	for _, mr := range mrs {
		if mr.SourceBranch == head && mr.TargetBranch == base && mr.State == "opened" {
			return mergeRequestFromGitLab(mr), nil
		}
	}
	return nil, nil
}

// GetPullRequest implements scm.PullRequests.
func (p *Provider) GetPullRequest(c context.Context, repo scm.Repository, number int64) (*scm.PullRequest, error) {
	op := prOp("get", repo, number)
	if err := repo.Validate(); err != nil {
		return nil, invalid(op, err)
	}
	mr, resp, err := p.client.MergeRequests.GetMergeRequest(project(repo), number, nil, gl.WithContext(c))
	if err != nil {
		return nil, p.fail(op, resp, err)
	}
	return mergeRequestFromGitLab(&mr.BasicMergeRequest), nil
}

// MergePullRequest implements scm.PullRequests. GitLab enforces the expected head with the sha
// parameter and answers 409 when the source branch moved.
func (p *Provider) MergePullRequest(c context.Context, repo scm.Repository, number int64, opts scm.MergeOptions) (*scm.MergeResult, error) {
	op := prOp("merge", repo, number)
	if err := repo.Validate(); err != nil {
		return nil, invalid(op, err)
	}
	if err := opts.Validate(); err != nil {
		return nil, invalid(op, err)
	}
	if opts.Method == scm.MergeMethodRebase {
		return nil, invalid(op, fmt.Errorf("GitLab merges with a merge commit or squash; rebase-merging is a project setting"))
	}
	accept := &gl.AcceptMergeRequestOptions{SHA: gl.Ptr(opts.ExpectedHeadSHA)}
	if opts.Method == scm.MergeMethodSquash {
		accept.Squash = gl.Ptr(true)
		if msg := commitMessage(opts); msg != "" {
			accept.SquashCommitMessage = gl.Ptr(msg)
		}
	} else if msg := commitMessage(opts); msg != "" {
		accept.MergeCommitMessage = gl.Ptr(msg)
	}
	mr, resp, err := p.client.MergeRequests.AcceptMergeRequest(project(repo), number, accept, gl.WithContext(c))
	if err == nil {
		if mr.State != "merged" {
			return nil, scm.NewError(Name, op, scm.KindNotMergeable, resp.StatusCode,
				fmt.Sprintf("GitLab accepted the request but merge request !%d is %s (merge trains or auto-merge may be enabled)", number, mr.State), nil)
		}
		return &scm.MergeResult{MergeCommitSHA: firstNonEmpty(mr.MergeCommitSHA, mr.SquashCommitSHA)}, nil
	}
	refused := p.fail(op, resp, err)
	switch refused.StatusCode {
	case http.StatusConflict:
		return nil, scm.NewError(Name, op, scm.KindHeadMoved, refused.StatusCode, fmt.Sprintf(
			"the source branch of merge request !%d is no longer at %s: read it again and check the new head before merging",
			number, opts.ExpectedHeadSHA), refused)
	case http.StatusMethodNotAllowed, http.StatusNotAcceptable, http.StatusUnprocessableEntity:
		current, getErr := p.GetPullRequest(c, repo, number)
		if getErr != nil {
			current = nil
		}
		return scm.ExplainRefusedMerge(Name, op, current, opts.ExpectedHeadSHA, refused)
	}
	return nil, refused
}

func commitMessage(opts scm.MergeOptions) string {
	switch {
	case opts.CommitTitle != "" && opts.CommitMessage != "":
		return opts.CommitTitle + "\n\n" + opts.CommitMessage
	case opts.CommitTitle != "":
		return opts.CommitTitle
	}
	return opts.CommitMessage
}

// ClosePullRequest implements scm.PullRequests.
func (p *Provider) ClosePullRequest(c context.Context, repo scm.Repository, number int64) error {
	op := prOp("close", repo, number)
	if err := repo.Validate(); err != nil {
		return invalid(op, err)
	}
	_, resp, err := p.client.MergeRequests.UpdateMergeRequest(project(repo), number, &gl.UpdateMergeRequestOptions{
		StateEvent: gl.Ptr("close"),
	}, gl.WithContext(c))
	if err != nil {
		return p.fail(op, resp, err)
	}
	return nil
}

func mergeRequestFromGitLab(mr *gl.BasicMergeRequest) *scm.PullRequest {
	out := &scm.PullRequest{
		Number:  mr.IID,
		Title:   mr.Title,
		Body:    mr.Description,
		Head:    mr.SourceBranch,
		Base:    mr.TargetBranch,
		HeadSHA: mr.SHA,
		URL:     mr.WebURL,
		State:   scm.PullRequestOpen,
	}
	switch mr.State {
	case "merged":
		out.State = scm.PullRequestMerged
		out.MergeCommitSHA = firstNonEmpty(mr.MergeCommitSHA, mr.SquashCommitSHA)
	case "closed":
		out.State = scm.PullRequestClosed
	}
	return out
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
