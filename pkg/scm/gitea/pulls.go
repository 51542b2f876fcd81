package gitea

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/internal/opname"
)

// Listing open pull requests is bounded: Gitea's list cannot filter by head branch.
const (
	pullsPageSize = 50
	maxPullsPages = 20
)

// CreatePullRequest implements scm.PullRequests.
func (p *Provider) CreatePullRequest(c context.Context, repo scm.Repository, pr scm.NewPullRequest) (*scm.PullRequest, error) {
	op := fmt.Sprintf("create pull request %s -> %s in %s", pr.Head, pr.Base, repo)
	if err := repo.Validate(); err != nil {
		return nil, p.invalid(op, err)
	}
	if err := pr.Validate(); err != nil {
		return nil, p.invalid(op, err)
	}
	api, err := p.api(c)
	if err != nil {
		return nil, p.fail(op, nil, err)
	}
	created, resp, err := api.CreatePullRequest(repo.Owner, repo.Name, sdk.CreatePullRequestOption{
		Head:  pr.Head,
		Base:  pr.Base,
		Title: pr.Title,
		Body:  pr.Body,
	})
	if err != nil {
		return nil, p.fail(op, resp, err)
	}
	return fromGitea(created), nil
}

// UpdatePullRequest implements scm.PullRequests.
func (p *Provider) UpdatePullRequest(c context.Context, repo scm.Repository, number int64, title, body string) (*scm.PullRequest, error) {
	op := opname.PullRequest("update", repo, number)
	if err := repo.Validate(); err != nil {
		return nil, p.invalid(op, err)
	}
	if title == "" {
		return nil, p.invalid(op, errors.New("pull request title is empty"))
	}
	api, err := p.api(c)
	if err != nil {
		return nil, p.fail(op, nil, err)
	}
	updated, resp, err := api.EditPullRequest(repo.Owner, repo.Name, number, sdk.EditPullRequestOption{
		Title: title,
		Body:  &body,
	})
	if err != nil {
		return nil, p.fail(op, resp, err)
	}
	return fromGitea(updated), nil
}

// FindOpenPullRequest implements scm.PullRequests. Gitea's lookup by base and head returns
// closed pull requests too, so open ones are listed and matched here.
func (p *Provider) FindOpenPullRequest(c context.Context, repo scm.Repository, head, base string) (*scm.PullRequest, error) {
	op := fmt.Sprintf("find the open pull request %s -> %s in %s", head, base, repo)
	if err := repo.Validate(); err != nil {
		return nil, p.invalid(op, err)
	}
	api, err := p.api(c)
	if err != nil {
		return nil, p.fail(op, nil, err)
	}
	for page := 1; page <= maxPullsPages; page++ {
		prs, resp, err := api.ListRepoPullRequests(repo.Owner, repo.Name, sdk.ListPullRequestsOptions{
			ListOptions: sdk.ListOptions{Page: page, PageSize: pullsPageSize},
			State:       sdk.StateOpen,
		})
		if err != nil {
			return nil, p.fail(op, resp, err)
		}
		for _, pr := range prs {
			if pr != nil && pr.Head != nil && pr.Base != nil && pr.Head.Ref == head && pr.Base.Ref == base &&
				pr.State == sdk.StateOpen && pr.Head.RepoID == pr.Base.RepoID {
				return fromGitea(pr), nil
			}
		}
		if len(prs) < pullsPageSize {
			break
		}
	}
	return nil, nil
}

// GetPullRequest implements scm.PullRequests.
func (p *Provider) GetPullRequest(c context.Context, repo scm.Repository, number int64) (*scm.PullRequest, error) {
	op := opname.PullRequest("get", repo, number)
	if err := repo.Validate(); err != nil {
		return nil, p.invalid(op, err)
	}
	api, err := p.api(c)
	if err != nil {
		return nil, p.fail(op, nil, err)
	}
	pr, resp, err := api.GetPullRequest(repo.Owner, repo.Name, number)
	if err != nil {
		return nil, p.fail(op, resp, err)
	}
	return fromGitea(pr), nil
}

// mergeStyleFastForwardOnly is Gitea's merge style (1.21 and later) that only moves the base to
// the head, and refuses when the head does not descend from the base as it is now.
const mergeStyleFastForwardOnly sdk.MergeStyle = "fast-forward-only"

// MergePullRequest implements scm.PullRequests. Gitea enforces the expected head with
// head_commit_id (409 "head out of date"), and the expected base, when given, with a
// fast-forward-only merge.
//
// The request is sent directly rather than through the SDK, whose merge call drops Gitea's
// explanation: a 405 means "still checking mergeability, try again later" as well as "already
// merged" or "not allowed", and only the message tells a transient refusal from a final one.
// "Try again later" is also Gitea's answer (1.26) to a pull request that conflicts with its base,
// and its API has nothing to tell the two apart (mergeable is false in both), so the refusal
// names both.
func (p *Provider) MergePullRequest(c context.Context, repo scm.Repository, number int64, opts scm.MergeOptions) (*scm.MergeResult, error) {
	op := opname.PullRequest("merge", repo, number)
	if err := repo.Validate(); err != nil {
		return nil, p.invalid(op, err)
	}
	if err := opts.Validate(); err != nil {
		return nil, p.invalid(op, err)
	}
	style := sdk.MergeStyleMerge
	switch opts.Method {
	case scm.MergeMethodSquash:
		style = sdk.MergeStyleSquash
	case scm.MergeMethodRebase:
		style = sdk.MergeStyleRebase
	}
	if opts.ExpectedBaseSHA != "" {
		// A head written on the expected base fast-forwards it; Gitea refuses a fast-forward-only
		// merge onto a base that moved, so the base is guarded by Gitea itself.
		style = mergeStyleFastForwardOnly
	}
	status, message, resp, err := p.postMerge(c, repo, number, sdk.MergePullRequestOption{
		Style:        style,
		Title:        opts.CommitTitle,
		Message:      opts.CommitMessage,
		HeadCommitId: opts.ExpectedHeadSHA,
	})
	if err != nil {
		return nil, p.fail(op, nil, err)
	}
	if status == http.StatusOK {
		after, getErr := p.GetPullRequest(c, repo, number)
		if getErr != nil {
			// The merge happened; only the merge commit id is unknown.
			return &scm.MergeResult{}, nil
		}
		return &scm.MergeResult{MergeCommitSHA: after.MergeCommitSHA}, nil
	}
	refused := scm.Classify(scm.Failure{Provider: p.name, Op: op, Response: resp, ServerMessage: message}, p.redactor)
	if status == http.StatusMethodNotAllowed && strings.Contains(strings.ToLower(message), "try again later") {
		return nil, scm.NewError(p.name, op, scm.KindTransient, status, fmt.Sprintf(
			"%s refuses to merge pull request #%d for now: it is still checking whether it can be merged, "+
				"or it conflicts with its target branch (%s's API answers both alike); will retry. If this lasts, "+
				"open the pull request in %s: a conflict is shown there, to resolve on the source branch",
			p.name, number, p.name, p.name), refused)
	}
	switch status {
	case http.StatusMethodNotAllowed, http.StatusConflict, http.StatusNotFound:
		current, getErr := p.GetPullRequest(c, repo, number)
		if getErr != nil {
			return nil, refused
		}
		return scm.ExplainRefusedMerge(p.name, op, current, opts.ExpectedHeadSHA, refused)
	}
	return nil, refused
}

// postMerge sends POST /repos/{owner}/{repo}/pulls/{index}/merge and returns the status and
// Gitea's message.
func (p *Provider) postMerge(c context.Context, repo scm.Repository, number int64, opt sdk.MergePullRequestOption) (int, string, *http.Response, error) {
	body, err := json.Marshal(opt)
	if err != nil {
		return 0, "", nil, err
	}
	u := fmt.Sprintf("%s/api/v1/repos/%s/%s/pulls/%d/merge", strings.TrimSuffix(p.baseURL, "/"),
		url.PathEscape(repo.Owner), url.PathEscape(repo.Name), number)
	req, err := http.NewRequestWithContext(c, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "token "+p.token)
	resp, err := p.http.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return 0, "", nil, err
	}
	var answer struct {
		Message string `json:"message"`
	}
	if resp.StatusCode != http.StatusOK && json.Unmarshal(data, &answer) != nil {
		answer.Message = strings.TrimSpace(string(data))
	}
	return resp.StatusCode, answer.Message, resp, nil
}

// ClosePullRequest implements scm.PullRequests.
func (p *Provider) ClosePullRequest(c context.Context, repo scm.Repository, number int64) error {
	op := opname.PullRequest("close", repo, number)
	if err := repo.Validate(); err != nil {
		return p.invalid(op, err)
	}
	api, err := p.api(c)
	if err != nil {
		return p.fail(op, nil, err)
	}
	closed := sdk.StateClosed
	_, resp, err := api.EditPullRequest(repo.Owner, repo.Name, number, sdk.EditPullRequestOption{State: &closed})
	if err != nil {
		return p.fail(op, resp, err)
	}
	return nil
}

func fromGitea(pr *sdk.PullRequest) *scm.PullRequest {
	out := &scm.PullRequest{
		Number: pr.Index,
		Title:  pr.Title,
		Body:   pr.Body,
		URL:    pr.HTMLURL,
		State:  scm.PullRequestOpen,
	}
	if pr.Head != nil {
		out.Head, out.HeadSHA = pr.Head.Ref, pr.Head.Sha
	}
	if pr.Base != nil {
		out.Base = pr.Base.Ref
	}
	switch {
	case pr.HasMerged:
		out.State = scm.PullRequestMerged
		if pr.MergedCommitID != nil {
			out.MergeCommitSHA = *pr.MergedCommitID
		}
	case pr.State == sdk.StateClosed:
		out.State = scm.PullRequestClosed
	}
	return out
}
