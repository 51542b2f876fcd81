package github

import (
	"context"
	"strconv"

	gh "github.com/google/go-github/v75/github"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/internal/opname"
)

var _ scm.StatusReader = (*Provider)(nil)

// maxCheckRunPages bounds the pages of check runs read for one commit (100 runs a page).
const maxCheckRunPages = 10

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
	var out []scm.ReadStatus
	opts := &gh.ListOptions{PerPage: 100}
	for range maxStatusPages {
		combined, resp, err := p.client.Repositories.GetCombinedStatus(c, repo.Owner, repo.Name, sha, opts)
		if err != nil {
			return nil, p.fail(op, resp, err)
		}
		for _, s := range combined.Statuses {
			out = append(out, scm.ReadStatus{Source: scm.SourceStatus, CommitStatus: scm.CommitStatus{
				SHA: sha, Name: s.GetContext(), State: stateFromGitHub(s.GetState()),
				Description: s.GetDescription(), TargetURL: s.GetTargetURL(),
				ProviderID: strconv.FormatInt(s.GetID(), 10),
			}})
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return out, nil
}

func (p *Provider) listCheckRuns(c context.Context, op string, repo scm.Repository, sha string) ([]scm.ReadStatus, error) {
	var out []scm.ReadStatus
	opts := &gh.ListCheckRunsOptions{Filter: gh.Ptr("latest"), ListOptions: gh.ListOptions{PerPage: 100}}
	for range maxCheckRunPages {
		runs, resp, err := p.client.Checks.ListCheckRunsForRef(c, repo.Owner, repo.Name, sha, opts)
		if err != nil {
			return nil, p.fail(op, resp, err)
		}
		for _, r := range runs.CheckRuns {
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
			out = append(out, st)
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return out, nil
}
