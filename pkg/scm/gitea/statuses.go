package gitea

import (
	"context"
	"strconv"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/internal/opname"
)

// SetCommitStatus implements scm.CommitStatuses.
func (p *Provider) SetCommitStatus(c context.Context, repo scm.Repository, st scm.CommitStatus) (scm.CommitStatus, error) {
	op := opname.CommitStatus("set", repo, st.SHA, st.Name)
	if err := repo.Validate(); err != nil {
		return st, p.invalid(op, err)
	}
	if err := st.Validate(); err != nil {
		return st, p.invalid(op, err)
	}
	api, err := p.api(c)
	if err != nil {
		return st, p.fail(op, nil, err)
	}
	created, resp, err := api.CreateStatus(repo.Owner, repo.Name, st.SHA, sdk.CreateStatusOption{
		State:       sdk.StatusState(st.State),
		TargetURL:   st.TargetURL,
		Description: st.Description,
		Context:     st.Name,
	})
	if err != nil {
		return st, p.fail(op, resp, err)
	}
	st.ProviderID = strconv.FormatInt(created.ID, 10)
	return st, nil
}

// GetCommitStatus implements scm.CommitStatuses, from the combined status, which holds the latest
// status of each context.
func (p *Provider) GetCommitStatus(c context.Context, repo scm.Repository, sha, name string) (*scm.CommitStatus, error) {
	_, combined, err := p.combinedStatus(c, opname.CommitStatus("get", repo, sha, name), repo, sha)
	if err != nil {
		return nil, err
	}
	var latest *sdk.Status
	for _, s := range combined.Statuses {
		if s != nil && s.Context == name && (latest == nil || s.ID > latest.ID) {
			latest = s
		}
	}
	if latest == nil {
		return nil, nil
	}
	return &scm.CommitStatus{
		SHA:         sha,
		Name:        name,
		State:       stateFromGitea(latest.State),
		Description: latest.Description,
		TargetURL:   latest.TargetURL,
		ProviderID:  strconv.FormatInt(latest.ID, 10),
	}, nil
}

// combinedStatus checks repo and sha, and reads the combined status of sha, which holds the
// latest status of each context (a page of them). It returns the client too, for further reads;
// errors are named for op.
func (p *Provider) combinedStatus(c context.Context, op string, repo scm.Repository, sha string) (*sdk.Client, *sdk.CombinedStatus, error) {
	if err := repo.Validate(); err != nil {
		return nil, nil, p.invalid(op, err)
	}
	if err := scm.ValidateSHA(sha); err != nil {
		return nil, nil, p.invalid(op, err)
	}
	api, err := p.api(c)
	if err != nil {
		return nil, nil, p.fail(op, nil, err)
	}
	combined, resp, err := api.GetCombinedStatus(repo.Owner, repo.Name, sha)
	if err != nil {
		return nil, nil, p.fail(op, resp, err)
	}
	return api, combined, nil
}

func stateFromGitea(s sdk.StatusState) scm.StatusState {
	switch s {
	case sdk.StatusSuccess:
		return scm.StatusSuccess
	case sdk.StatusFailure, sdk.StatusError, sdk.StatusWarning:
		return scm.StatusFailure
	}
	return scm.StatusPending
}
