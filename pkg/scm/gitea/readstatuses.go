package gitea

import (
	"context"
	"strconv"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/internal/opname"
)

var _ scm.StatusReader = (*Provider)(nil)

// maxStatusPages bounds the pages (50 statuses each, Gitea's default maximum) read of one commit.
const maxStatusPages = 10

// ListCommitStatuses implements scm.StatusReader: the latest status of each context, from the
// combined status, which holds the latest of each context: one read. Only when the combined status
// says it holds fewer than the commit has (over a page of contexts) is the full status list read.
func (p *Provider) ListCommitStatuses(c context.Context, repo scm.Repository, sha string) ([]scm.ReadStatus, error) {
	op := opname.CommitStatuses(repo, sha)
	if err := repo.Validate(); err != nil {
		return nil, p.invalid(op, err)
	}
	if err := scm.ValidateSHA(sha); err != nil {
		return nil, p.invalid(op, err)
	}
	api, err := p.api(c)
	if err != nil {
		return nil, p.fail(op, nil, err)
	}
	combined, resp, err := api.GetCombinedStatus(repo.Owner, repo.Name, sha)
	if err != nil {
		return nil, p.fail(op, resp, err)
	}
	if combined.TotalCount <= len(combined.Statuses) {
		return scm.LatestByName(readStatuses(sha, combined.Statuses)), nil
	}
	var out []scm.ReadStatus
	opts := sdk.ListStatusesOption{ListOptions: sdk.ListOptions{Page: 1, PageSize: 50}}
	for range maxStatusPages {
		statuses, resp, err := api.ListStatuses(repo.Owner, repo.Name, sha, opts)
		if err != nil {
			return nil, p.fail(op, resp, err)
		}
		out = append(out, readStatuses(sha, statuses)...)
		if len(statuses) < opts.PageSize {
			break
		}
		opts.Page++
	}
	return scm.LatestByName(out), nil
}

func readStatuses(sha string, statuses []*sdk.Status) []scm.ReadStatus {
	out := make([]scm.ReadStatus, 0, len(statuses))
	for _, s := range statuses {
		if s == nil {
			continue
		}
		out = append(out, scm.ReadStatus{Source: scm.SourceStatus, CommitStatus: scm.CommitStatus{
			SHA: sha, Name: s.Context, State: stateFromGitea(s.State), Description: s.Description,
			TargetURL: s.TargetURL, ProviderID: strconv.FormatInt(s.ID, 10),
		}})
	}
	return out
}
