package view

import (
	"cmp"
	"slices"
	"time"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

// History is a strategy's dry commits × its environments: when each commit reached each
// environment, which were reverted, and each environment's DORA figures. It is read from the
// promoter's status (history, active and proposed commits) and the RevertCommits' status only.
type History struct {
	Namespace, Name string
	// Environments are the branches, in DAG order: the columns.
	Environments []string
	// Commits are the rows, newest first.
	Commits []HistoryCommit
	DORA    []EnvironmentDORA
}

// HistoryCommit is one dry commit and what happened to it in each environment.
type HistoryCommit struct {
	DrySHA, URL, Subject string
	// Time is the dry commit's committer time, when a status holds it.
	Time *time.Time
	// Cells are in the order of History.Environments.
	Cells []HistoryCell
}

// HistoryCell is one dry commit in one environment.
type HistoryCell struct {
	// Reached lists when the commit was promoted into the environment, newest first.
	Reached []Reach
	Active  bool
	// Reverted are the RevertCommits that named the commit as bad in the environment.
	Reverted []Revert
	// Restored are the merged RevertCommits that brought the environment back to the commit.
	Restored []Revert
}

// Reach is one promotion of a dry commit into an environment.
type Reach struct {
	Time           time.Time
	PullRequestURL string
	External       bool
	// Change links what this promotion changed in the environment.
	Change Change
}

// EnvironmentDORA is one environment's figures.
type EnvironmentDORA struct {
	Branch string
	DORA
}

// BuildHistory lays out a strategy's history. reverts may hold RevertCommits of other strategies.
func BuildHistory(s *promoterv1alpha1.PromotionStrategy, links Links, reverts []*rollbackv1alpha1.RevertCommit, now time.Time) History {
	h := History{Namespace: s.Namespace, Name: s.Name}
	statuses := map[string]promoterv1alpha1.EnvironmentStatus{}
	for _, st := range s.Status.Environments {
		statuses[st.Branch] = st
	}
	for _, i := range dagOrder(s.Spec.Environments) {
		h.Environments = append(h.Environments, s.Spec.Environments[i].Branch)
	}
	commits, times := knownCommits(s.Status.Environments)
	rows := map[string]*HistoryCommit{}
	row := func(sha string) *HistoryCommit {
		if r := rows[sha]; r != nil {
			return r
		}
		r := &HistoryCommit{DrySHA: sha, URL: links.Commit(sha), Subject: commits[sha].Subject, Cells: make([]HistoryCell, len(h.Environments))}
		if t, ok := times[sha]; ok {
			r.Time = &t
		}
		rows[sha] = r
		return r
	}
	for col, branch := range h.Environments {
		st := statuses[branch]
		in := DORAInput{Now: now, CommitTimes: times}
		for i, rec := range st.History {
			c := &row(rec.DrySHA).Cells[col]
			c.Reached = append(c.Reached, Reach{Time: rec.Time.Time, PullRequestURL: rec.PullRequestURL, External: rec.External,
				Change: promotionChange(links, s, branch, st.History, i)})
			in.Deployments = append(in.Deployments, Deployment{DrySHA: rec.DrySHA, Time: rec.Time.Time})
		}
		if st.Active.DrySHA != "" {
			row(st.Active.DrySHA).Cells[col].Active = true
		}
		for _, rc := range reverts {
			if rc.Spec.PromotionStrategyRef.Name != s.Name || rc.Spec.ActiveBranch != branch {
				continue
			}
			rv, rem := revertOf(rc)
			if rem.BadDrySHA != "" {
				c := &row(rem.BadDrySHA).Cells[col]
				c.Reverted = append(c.Reverted, rv)
				in.Remediations = append(in.Remediations, rem)
			}
			if rc.Status.Phase == rollbackv1alpha1.RevertMerged && rv.TargetDrySHA != "" {
				c := &row(rv.TargetDrySHA).Cells[col]
				c.Restored = append(c.Restored, rv)
			}
		}
		h.DORA = append(h.DORA, EnvironmentDORA{Branch: branch, DORA: ComputeDORA(in)})
	}
	h.Commits = sortedRows(rows)
	return h
}

// knownCommits are the dry commits the status describes (active or proposed somewhere), with
// their subject, and the committer times it holds.
func knownCommits(envs []promoterv1alpha1.EnvironmentStatus) (map[string]promoterv1alpha1.CommitState, map[string]time.Time) {
	commits := map[string]promoterv1alpha1.CommitState{}
	times := map[string]time.Time{}
	for _, st := range envs {
		for _, c := range []promoterv1alpha1.CommitState{st.Active, st.Proposed} {
			if c.DrySHA == "" {
				continue
			}
			commits[c.DrySHA] = c
			if c.CommitTime != nil {
				times[c.DrySHA] = c.CommitTime.Time
			}
		}
	}
	return commits, times
}

// revertOf reads a RevertCommit as the history shows it, and as a remediation for the figures.
func revertOf(rc *rollbackv1alpha1.RevertCommit) (Revert, Remediation) {
	rv := Revert{Name: rc.Name, Phase: string(rc.Status.Phase), TargetDrySHA: rc.Status.TargetDrySHA,
		BadDrySHA: rc.Status.BadDrySHA, Reason: rc.Spec.Reason}
	if rv.Phase == "" {
		rv.Phase = string(rollbackv1alpha1.RevertPending)
	}
	if rv.BadDrySHA == "" {
		rv.BadDrySHA = rc.Spec.BadDrySHA
	}
	if pr := rc.Status.PullRequest; pr != nil {
		rv.PullRequestURL = pr.URL
	}
	rem := Remediation{BadDrySHA: rv.BadDrySHA}
	if tr := rc.Spec.Trigger; tr != nil {
		rem.FailingSince = tr.FailingSince.Time
	}
	if rc.Status.Phase == rollbackv1alpha1.RevertMerged && rc.Status.MergeTime != nil {
		rem.Restored = rc.Status.MergeTime.Time
	}
	return rv, rem
}

// sortedRows orders the commits newest first: by the latest time they reached an environment,
// else by their own time; a commit that reached none yet (only proposed or reverted to) first.
func sortedRows(rows map[string]*HistoryCommit) []HistoryCommit {
	latest := func(c *HistoryCommit) time.Time {
		var at time.Time
		for _, cell := range c.Cells {
			for _, r := range cell.Reached {
				if r.Time.After(at) {
					at = r.Time
				}
			}
		}
		if at.IsZero() && c.Time != nil {
			at = *c.Time
		}
		return at
	}
	out := make([]HistoryCommit, 0, len(rows))
	keys := make(map[string]time.Time, len(rows))
	for sha, r := range rows {
		out = append(out, *r)
		keys[sha] = latest(r)
	}
	slices.SortFunc(out, func(a, b HistoryCommit) int {
		ta, tb := keys[a.DrySHA], keys[b.DrySHA]
		if ta.IsZero() != tb.IsZero() {
			if ta.IsZero() {
				return -1
			}
			return 1
		}
		return cmp.Or(tb.Compare(ta), cmp.Compare(a.DrySHA, b.DrySHA))
	})
	return out
}
