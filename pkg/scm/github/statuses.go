package github

import (
	"context"
	"net/http"
	"strconv"

	gh "github.com/google/go-github/v75/github"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/internal/opname"
	"github.com/sluicehq/sluice/pkg/text"
)

// maxStatusDescription is GitHub's limit for a commit status description; longer ones get a 422.
const maxStatusDescription = 140

// SetCommitStatus implements scm.CommitStatuses: a check run as an App, a status otherwise.
func (p *Provider) SetCommitStatus(c context.Context, repo scm.Repository, st scm.CommitStatus) (scm.CommitStatus, error) {
	op := opname.CommitStatus("set", repo, st.SHA, st.Name)
	if err := repo.Validate(); err != nil {
		return st, invalid(op, err)
	}
	if err := st.Validate(); err != nil {
		return st, invalid(op, err)
	}
	if p.checks {
		return p.setCheckRun(ctx(c), op, repo, st)
	}
	status := &gh.RepoStatus{
		State:   gh.Ptr(string(st.State)),
		Context: gh.Ptr(st.Name),
	}
	if st.Description != "" {
		status.Description = gh.Ptr(text.Truncate(st.Description, maxStatusDescription))
	}
	if st.TargetURL != "" {
		status.TargetURL = gh.Ptr(st.TargetURL)
	}
	created, resp, err := p.client.Repositories.CreateStatus(ctx(c), repo.Owner, repo.Name, st.SHA, status)
	if err != nil {
		return st, p.fail(op, resp, err)
	}
	st.ProviderID = strconv.FormatInt(created.GetID(), 10)
	return st, nil
}

// GetCommitStatus implements scm.CommitStatuses.
func (p *Provider) GetCommitStatus(c context.Context, repo scm.Repository, sha, name string) (*scm.CommitStatus, error) {
	op := opname.CommitStatus("get", repo, sha, name)
	if err := repo.Validate(); err != nil {
		return nil, invalid(op, err)
	}
	if err := scm.ValidateSHA(sha); err != nil {
		return nil, invalid(op, err)
	}
	if p.checks {
		return p.getCheckRun(ctx(c), op, repo, sha, name)
	}
	// The combined status holds the latest status of each context: its pages are read until
	// one holds name.
	found, err := scm.ReadPages(func(page int) ([]scm.CommitStatus, int, error) {
		combined, resp, err := p.client.Repositories.GetCombinedStatus(ctx(c), repo.Owner, repo.Name, sha, &gh.ListOptions{Page: page, PerPage: 100})
		if err != nil {
			return nil, 0, p.fail(op, resp, err)
		}
		for _, s := range combined.Statuses {
			if s.GetContext() == name {
				return []scm.CommitStatus{{
					SHA:         sha,
					Name:        name,
					State:       stateFromGitHub(s.GetState()),
					Description: s.GetDescription(),
					TargetURL:   s.GetTargetURL(),
					ProviderID:  strconv.FormatInt(s.GetID(), 10),
				}}, 0, nil
			}
		}
		return nil, resp.NextPage, nil
	})
	if err != nil || len(found) == 0 {
		return nil, err
	}
	return &found[0], nil
}

func stateFromGitHub(state string) scm.StatusState {
	switch state {
	case "success":
		return scm.StatusSuccess
	case "failure", "error":
		return scm.StatusFailure
	}
	return scm.StatusPending
}

// setCheckRun creates a check run, or completes the one named by ProviderID. A pending status
// always starts a new run: GitHub does not move a completed run back to in progress.
func (p *Provider) setCheckRun(c context.Context, op string, repo scm.Repository, st scm.CommitStatus) (scm.CommitStatus, error) {
	status, conclusion := checkRunState(st.State)
	var output *gh.CheckRunOutput
	if st.Description != "" {
		output = &gh.CheckRunOutput{Title: gh.Ptr(st.Name), Summary: gh.Ptr(st.Description)}
	}
	var details *string
	if st.TargetURL != "" {
		details = gh.Ptr(st.TargetURL)
	}

	if id, err := strconv.ParseInt(st.ProviderID, 10, 64); err == nil && id > 0 && conclusion != nil {
		run, resp, err := p.client.Checks.UpdateCheckRun(c, repo.Owner, repo.Name, id, gh.UpdateCheckRunOptions{
			Name:        st.Name,
			DetailsURL:  details,
			Status:      gh.Ptr(status),
			Conclusion:  conclusion,
			CompletedAt: &gh.Timestamp{Time: nowUTC()},
			Output:      output,
		})
		switch {
		case err == nil:
			st.ProviderID = strconv.FormatInt(run.GetID(), 10)
			return st, nil
		case resp == nil || resp.StatusCode != http.StatusNotFound:
			return st, p.fail(op, resp, err)
		}
		// The run is gone (or belongs to another App): start a new one.
	}

	opts := gh.CreateCheckRunOptions{
		Name:       st.Name,
		HeadSHA:    st.SHA,
		DetailsURL: details,
		Status:     gh.Ptr(status),
		Conclusion: conclusion,
		Output:     output,
	}
	if conclusion != nil {
		opts.CompletedAt = &gh.Timestamp{Time: nowUTC()}
	}
	run, resp, err := p.client.Checks.CreateCheckRun(c, repo.Owner, repo.Name, opts)
	if err != nil {
		return st, p.fail(op, resp, err)
	}
	st.ProviderID = strconv.FormatInt(run.GetID(), 10)
	return st, nil
}

func checkRunState(s scm.StatusState) (string, *string) {
	switch s {
	case scm.StatusSuccess:
		return "completed", gh.Ptr("success")
	case scm.StatusFailure:
		return "completed", gh.Ptr("failure")
	}
	return "in_progress", nil
}

func (p *Provider) getCheckRun(c context.Context, op string, repo scm.Repository, sha, name string) (*scm.CommitStatus, error) {
	runs, resp, err := p.client.Checks.ListCheckRunsForRef(c, repo.Owner, repo.Name, sha, &gh.ListCheckRunsOptions{
		CheckName:   gh.Ptr(name),
		Filter:      gh.Ptr("latest"),
		ListOptions: gh.ListOptions{PerPage: 100},
	})
	if err != nil {
		return nil, p.fail(op, resp, err)
	}
	var latest *gh.CheckRun
	for _, r := range runs.CheckRuns {
		if r.GetName() == name && (latest == nil || r.GetID() > latest.GetID()) {
			latest = r
		}
	}
	if latest == nil {
		return nil, nil
	}
	st := &scm.CommitStatus{
		SHA:        sha,
		Name:       name,
		State:      stateFromCheckRun(latest.GetStatus(), latest.GetConclusion()),
		TargetURL:  latest.GetDetailsURL(),
		ProviderID: strconv.FormatInt(latest.GetID(), 10),
	}
	if latest.Output != nil {
		st.Description = latest.Output.GetSummary()
	}
	return st, nil
}

func stateFromCheckRun(status, conclusion string) scm.StatusState {
	if status != "completed" {
		return scm.StatusPending
	}
	switch conclusion {
	case "success", "neutral", "skipped":
		return scm.StatusSuccess
	}
	return scm.StatusFailure
}
