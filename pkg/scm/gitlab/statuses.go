package gitlab

import (
	"context"
	"net/http"
	"strconv"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/internal/opname"
)

// SetCommitStatus implements scm.CommitStatuses.
//
// GitLab refuses to set a status to the state it already has ("Cannot transition status via
// :run from :running", 400). When that happens the current status is read: if it already says
// what was asked, the call succeeds.
func (p *Provider) SetCommitStatus(c context.Context, repo scm.Repository, st scm.CommitStatus) (scm.CommitStatus, error) {
	op := opname.CommitStatus("set", repo, st.SHA, st.Name)
	if err := repo.Validate(); err != nil {
		return st, invalid(op, err)
	}
	if err := st.Validate(); err != nil {
		return st, invalid(op, err)
	}
	opts := &gl.SetCommitStatusOptions{
		State: toGitLab(st.State),
		Name:  gl.Ptr(st.Name),
	}
	if st.Description != "" {
		opts.Description = gl.Ptr(st.Description)
	}
	if st.TargetURL != "" {
		opts.TargetURL = gl.Ptr(st.TargetURL)
	}
	created, resp, err := p.client.Commits.SetCommitStatus(project(repo), st.SHA, opts, gl.WithContext(c))
	if err != nil {
		failure := p.fail(op, resp, err)
		if isStatus(resp, http.StatusBadRequest) && serverSays(failure, "cannot transition status") {
			current, getErr := p.GetCommitStatus(c, repo, st.SHA, st.Name)
			if getErr == nil && current != nil && current.State == st.State &&
				current.Description == st.Description && current.TargetURL == st.TargetURL {
				return *current, nil
			}
		}
		return st, failure
	}
	st.ProviderID = strconv.FormatInt(created.ID, 10)
	return st, nil
}

// GetCommitStatus implements scm.CommitStatuses. GitLab lists the latest status of each name
// unless asked for all.
func (p *Provider) GetCommitStatus(c context.Context, repo scm.Repository, sha, name string) (*scm.CommitStatus, error) {
	op := opname.CommitStatus("get", repo, sha, name)
	if err := repo.Validate(); err != nil {
		return nil, invalid(op, err)
	}
	if err := scm.ValidateSHA(sha); err != nil {
		return nil, invalid(op, err)
	}
	statuses, resp, err := p.client.Commits.GetCommitStatuses(project(repo), sha, &gl.GetCommitStatusesOptions{
		Name:        gl.Ptr(name),
		ListOptions: gl.ListOptions{PerPage: 100},
	}, gl.WithContext(c))
	if err != nil {
		return nil, p.fail(op, resp, err)
	}
	var latest *gl.CommitStatus
	for _, s := range statuses {
		if s.Name == name && (latest == nil || s.ID > latest.ID) {
			latest = s
		}
	}
	if latest == nil {
		return nil, nil
	}
	return &scm.CommitStatus{
		SHA:         sha,
		Name:        name,
		State:       stateFromGitLab(latest.Status),
		Description: latest.Description,
		TargetURL:   latest.TargetURL,
		ProviderID:  strconv.FormatInt(latest.ID, 10),
	}, nil
}

func toGitLab(s scm.StatusState) gl.BuildStateValue {
	switch s {
	case scm.StatusSuccess:
		return gl.Success
	case scm.StatusFailure:
		return gl.Failed
	}
	return gl.Pending
}

func stateFromGitLab(status string) scm.StatusState {
	switch gl.BuildStateValue(status) {
	case gl.Success:
		return scm.StatusSuccess
	case gl.Failed, gl.Canceled:
		return scm.StatusFailure
	}
	return scm.StatusPending
}
