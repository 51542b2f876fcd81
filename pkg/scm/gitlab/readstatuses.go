package gitlab

import (
	"context"
	"strconv"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/internal/opname"
)

var _ scm.StatusReader = (*Provider)(nil)

// maxListPages bounds the pages (100 entries each) read of one commit's statuses or pipelines.
const maxListPages = 10

// PipelineStatusName names a commit's pipeline among its statuses; a named pipeline (workflow:name)
// is "pipeline/<name>".
const PipelineStatusName = "pipeline"

// ListCommitStatuses implements scm.StatusReader: the latest commit status of each name (every CI
// job is one, named after the job, beside statuses set through the API) and the newest pipeline
// of the commit. Two reads for a commit with fewer than 100 of each.
func (p *Provider) ListCommitStatuses(c context.Context, repo scm.Repository, sha string) ([]scm.ReadStatus, error) {
	op := opname.CommitStatuses(repo, sha)
	if err := repo.Validate(); err != nil {
		return nil, invalid(op, err)
	}
	if err := scm.ValidateSHA(sha); err != nil {
		return nil, invalid(op, err)
	}
	var out []scm.ReadStatus
	sopts := &gl.GetCommitStatusesOptions{ListOptions: gl.ListOptions{PerPage: 100}}
	for range maxListPages {
		statuses, resp, err := p.client.Commits.GetCommitStatuses(project(repo), sha, sopts, gl.WithContext(c))
		if err != nil {
			return nil, p.fail(op, resp, err)
		}
		for _, s := range statuses {
			out = append(out, scm.ReadStatus{Source: scm.SourceStatus, CommitStatus: scm.CommitStatus{
				SHA: sha, Name: s.Name, State: stateFromGitLab(s.Status), Description: s.Description,
				TargetURL: s.TargetURL, ProviderID: strconv.FormatInt(s.ID, 10),
			}})
		}
		if resp.NextPage == 0 {
			break
		}
		sopts.Page = resp.NextPage
	}
	popts := &gl.ListProjectPipelinesOptions{SHA: gl.Ptr(sha), ListOptions: gl.ListOptions{PerPage: 100}}
	for range maxListPages {
		pipelines, resp, err := p.client.Pipelines.ListProjectPipelines(project(repo), popts, gl.WithContext(c))
		if err != nil {
			return nil, p.fail(op, resp, err)
		}
		for _, pl := range pipelines {
			name := PipelineStatusName
			if pl.Name != "" {
				name += "/" + pl.Name
			}
			out = append(out, scm.ReadStatus{Source: scm.SourcePipeline, CommitStatus: scm.CommitStatus{
				SHA: sha, Name: name, State: stateFromGitLab(pl.Status),
				Description: "pipeline #" + strconv.FormatInt(pl.IID, 10) + " on " + pl.Ref + ": " + pl.Status,
				TargetURL:   pl.WebURL, ProviderID: strconv.FormatInt(pl.ID, 10),
			}})
		}
		if resp.NextPage == 0 {
			break
		}
		popts.Page = resp.NextPage
	}
	return scm.LatestByName(out), nil
}
