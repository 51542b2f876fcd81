package gitea

import (
	"context"
	"strconv"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/internal/opname"
)

var _ scm.StatusReader = (*Provider)(nil)

// statusPageSize is how many statuses a page of a commit's list holds: Gitea's default maximum.
const statusPageSize = 50

// ListCommitStatuses implements scm.StatusReader: the latest status of each context, from the
// combined status, which holds the latest of each context: one read. Only when the combined status
// says it holds fewer than the commit has (over a page of contexts) is the full status list read.
func (p *Provider) ListCommitStatuses(c context.Context, repo scm.Repository, sha string) ([]scm.ReadStatus, error) {
	op := opname.CommitStatuses(repo, sha)
	api, combined, err := p.combinedStatus(c, op, repo, sha)
	if err != nil {
		return nil, err
	}
	if combined.TotalCount <= len(combined.Statuses) {
		return scm.LatestByName(readStatuses(sha, combined.Statuses)), nil
	}
	all, err := scm.ReadPages(func(page int) ([]scm.ReadStatus, int, error) {
		opts := sdk.ListStatusesOption{ListOptions: sdk.ListOptions{Page: max(page, 1), PageSize: statusPageSize}}
		statuses, resp, err := api.ListStatuses(repo.Owner, repo.Name, sha, opts)
		if err != nil {
			return nil, 0, p.fail(op, resp, err)
		}
		// A full page may have one after it; Gitea's Link header is not relied on.
		next := 0
		if len(statuses) >= statusPageSize {
			next = opts.Page + 1
		}
		return readStatuses(sha, statuses), next, nil
	})
	if err != nil {
		return nil, err
	}
	return scm.LatestByName(all), nil
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
