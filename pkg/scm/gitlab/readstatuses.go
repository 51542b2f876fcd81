package gitlab

import (
	"context"
	"strconv"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/internal/opname"
)

var _ scm.StatusReader = (*Provider)(nil)

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
	statuses, err := scm.ReadPages(func(page int) ([]scm.ReadStatus, int, error) {
		opts := &gl.GetCommitStatusesOptions{ListOptions: gl.ListOptions{Page: int64(page), PerPage: 100}}
		statuses, resp, err := p.client.Commits.GetCommitStatuses(project(repo), sha, opts, gl.WithContext(c))
		if err != nil {
			return nil, 0, p.fail(op, resp, err)
		}
		out := make([]scm.ReadStatus, 0, len(statuses))
		for _, s := range statuses {
			out = append(out, scm.ReadStatus{Source: scm.SourceStatus, CommitStatus: scm.CommitStatus{
				SHA: sha, Name: s.Name, State: stateFromGitLab(s.Status), Description: s.Description,
				TargetURL: s.TargetURL, ProviderID: strconv.FormatInt(s.ID, 10),
			}})
		}
		return out, int(resp.NextPage), nil
	})
	if err != nil {
		return nil, err
	}
	pipelines, err := scm.ReadPages(func(page int) ([]scm.ReadStatus, int, error) {
		opts := &gl.ListProjectPipelinesOptions{SHA: gl.Ptr(sha), ListOptions: gl.ListOptions{Page: int64(page), PerPage: 100}}
		pipelines, resp, err := p.client.Pipelines.ListProjectPipelines(project(repo), opts, gl.WithContext(c))
		if err != nil {
			return nil, 0, p.fail(op, resp, err)
		}
		out := make([]scm.ReadStatus, 0, len(pipelines))
		for _, pl := range pipelines {
			out = append(out, readPipeline(sha, pl))
		}
		return out, int(resp.NextPage), nil
	})
	if err != nil {
		return nil, err
	}
	return scm.LatestByName(append(statuses, pipelines...)), nil
}

func readPipeline(sha string, pl *gl.PipelineInfo) scm.ReadStatus {
	name := PipelineStatusName
	if pl.Name != "" {
		name += "/" + pl.Name
	}
	return scm.ReadStatus{Source: scm.SourcePipeline, CommitStatus: scm.CommitStatus{
		SHA: sha, Name: name, State: stateFromGitLab(pl.Status),
		Description: "pipeline #" + strconv.FormatInt(pl.IID, 10) + " on " + pl.Ref + ": " + pl.Status,
		TargetURL:   pl.WebURL, ProviderID: strconv.FormatInt(pl.ID, 10),
	}}
}
