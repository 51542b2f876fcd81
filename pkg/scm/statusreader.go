package scm

import (
	"context"
	"sort"
	"strconv"
)

// StatusReader lists what an SCM holds about one commit: its commit statuses, and on SCMs that
// have them, GitHub check runs and GitLab pipelines. Sluice imports them as CommitStatus objects,
// so a promotion can wait for a CI check that runs on the SCM, or for a health verdict another
// cluster published there.
//
// Providers with an SCM API implement it beside CommitStatuses; plain git does not.
type StatusReader interface {
	// ListCommitStatuses returns the latest status of each name on sha, sorted by name. A GitHub
	// check run and a commit status of the same name are both returned, each with its Source.
	ListCommitStatuses(ctx context.Context, repo Repository, sha string) ([]ReadStatus, error)
}

// StatusSource is where on the SCM a read status comes from.
type StatusSource string

const (
	// SourceStatus is a commit status (GitHub, GitLab, Gitea/Forgejo). On GitLab every CI job
	// shows as one, named after the job.
	SourceStatus StatusSource = "status"
	// SourceCheckRun is a GitHub check run.
	SourceCheckRun StatusSource = "check-run"
	// SourcePipeline is a GitLab pipeline, named "pipeline" (or "pipeline/<name>" when the
	// pipeline has a name).
	SourcePipeline StatusSource = "pipeline"
)

// ReadStatus is one status read from the SCM.
type ReadStatus struct {
	CommitStatus
	Source StatusSource
}

// LatestByName keeps, for each (source, name), the status with the highest numeric provider id
// (GitHub, GitLab and Gitea hand ids out in increasing order, so the newest), and sorts the result
// by name then source. SCMs list statuses newest first, but not all of them promise it.
func LatestByName(in []ReadStatus) []ReadStatus {
	type key struct {
		source StatusSource
		name   string
	}
	latest := map[key]ReadStatus{}
	for _, s := range in {
		k := key{s.Source, s.Name}
		if cur, ok := latest[k]; !ok || numericID(s.ProviderID) > numericID(cur.ProviderID) {
			latest[k] = s
		}
	}
	out := make([]ReadStatus, 0, len(latest))
	for _, s := range latest {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Source < out[j].Source
	})
	return out
}

func numericID(id string) int64 {
	n, _ := strconv.ParseInt(id, 10, 64)
	return n
}
