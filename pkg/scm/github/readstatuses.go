package github

import (
	"context"
	"strconv"

	gh "github.com/google/go-github/v75/github"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/internal/opname"
)

var _ scm.StatusReader = (*Provider)(nil)

// ListCommitStatuses implements scm.StatusReader: the combined status (the latest status of each
// context) and the latest check run of each name. Two reads for a commit with fewer than 100 of
// each.
func (p *Provider) ListCommitStatuses(c context.Context, repo scm.Repository, sha string) ([]scm.ReadStatus, error) {
	op := opname.CommitStatuses(repo, sha)
	if err := repo.Validate(); err != nil {
		return nil, invalid(op, err)
	}
	if err := scm.ValidateSHA(sha); err != nil {
		return nil, invalid(op, err)
	}
	statuses, err := p.listStatuses(ctx(c), op, repo, sha)
	if err != nil {
		return nil, err
	}
	runs, err := p.listCheckRuns(ctx(c), op, repo, sha)
	if err != nil {
		return nil, err
	}
	return scm.LatestByName(append(statuses, runs...)), nil
}

func (p *Provider) listStatuses(c context.Context, op string, repo scm.Repository, sha string) ([]scm.ReadStatus, error) {
	return scm.ReadPages(func(page int) ([]scm.ReadStatus, int, error) {
		opts := &gh.ListOptions{Page: page, PerPage: 100}
		combined, resp, err := p.client.Repositories.GetCombinedStatus(c, repo.Owner, repo.Name, sha, opts)
		if err != nil {
			return nil, 0, p.fail(op, resp, err)
		}
		out := make([]scm.ReadStatus, 0, len(combined.Statuses))
		for _, s := range combined.Statuses {
			out = append(out, scm.ReadStatus{Source: scm.SourceStatus, CommitStatus: scm.CommitStatus{
				SHA: sha, Name: s.GetContext(), State: stateFromGitHub(s.GetState()),
				Description: s.GetDescription(), TargetURL: s.GetTargetURL(),
				ProviderID: strconv.FormatInt(s.GetID(), 10),
			}})
		}
		return out, resp.NextPage, nil
	})
}

func (p *Provider) listCheckRuns(c context.Context, op string, repo scm.Repository, sha string) ([]scm.ReadStatus, error) {
	return scm.ReadPages(func(page int) ([]scm.ReadStatus, int, error) {
		opts := &gh.ListCheckRunsOptions{Filter: gh.Ptr("latest"), ListOptions: gh.ListOptions{Page: page, PerPage: 100}}
		runs, resp, err := p.client.Checks.ListCheckRunsForRef(c, repo.Owner, repo.Name, sha, opts)
		if err != nil {
			return nil, 0, p.fail(op, resp, err)
		}
		out := make([]scm.ReadStatus, 0, len(runs.CheckRuns))
		for _, r := range runs.CheckRuns {
			out = append(out, readCheckRun(sha, r))
		}
		return out, resp.NextPage, nil
	})
}

func readCheckRun(sha string, r *gh.CheckRun) scm.ReadStatus {
	st := scm.ReadStatus{Source: scm.SourceCheckRun, CommitStatus: scm.CommitStatus{
		SHA: sha, Name: r.GetName(), State: stateFromCheckRun(r.GetStatus(), r.GetConclusion()),
		TargetURL: r.GetDetailsURL(), ProviderID: strconv.FormatInt(r.GetID(), 10),
	}}
	if r.Output != nil {
		st.Description = r.Output.GetTitle()
		if st.Description == "" {
			st.Description = r.Output.GetSummary()
		}
	}
	return st
}
