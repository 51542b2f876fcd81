package view

import (
	"slices"
	"time"
)

// Deployment is one promotion into an environment, as the promoter recorded it in
// status.environments[].history.
type Deployment struct {
	DrySHA string
	// Time is when the merge was made or observed.
	Time time.Time
}

// Remediation is a RevertCommit of an environment, as the rollback-controller reports it.
type Remediation struct {
	// BadDrySHA is the dry commit reverted (status.badDrySHA, else spec.badDrySHA).
	BadDrySHA string
	// FailingSince is when a RollbackPolicy first saw the check fail (spec.trigger.failingSince);
	// zero for a revert a person started.
	FailingSince time.Time
	// Restored is when the revert merged (status.mergeTime); zero while it has not.
	Restored time.Time
}

// DORAInput is what the four figures of one environment are computed from.
type DORAInput struct {
	Now time.Time
	// Deployments are the environment's promotion records, in any order.
	Deployments []Deployment
	// CommitTimes are the committer times of the dry commits whose time a status holds.
	CommitTimes  map[string]time.Time
	Remediations []Remediation
}

// DORA is one environment's four figures, each with the number of samples it stands on: the
// statuses keep a bounded history, so every figure covers only what they still hold.
type DORA struct {
	// Deployments is the number of promotion records; Since the oldest one's time.
	Deployments int
	Since       time.Time
	// PerDay is Deployments over the days from Since to now; zero without deployments.
	PerDay float64
	// LeadTime is the median time from a dry commit to its promotion, over LeadTimeSamples
	// deployments whose dry commit's time is known.
	LeadTime        time.Duration
	LeadTimeSamples int
	// Failed is the number of deployments a RevertCommit names as bad; FailureRate is
	// Failed/Deployments.
	Failed      int
	FailureRate float64
	// TimeToRestore is the median time from failure to the merged revert, over RestoreSamples
	// merged reverts whose failure start is known.
	TimeToRestore  time.Duration
	RestoreSamples int
}

// ComputeDORA computes an environment's figures. It reads and writes nothing else.
//
//   - Deployment frequency: the promotion records over the time from the oldest to now; the
//     history between them is complete, as the promoter drops only the oldest records.
//   - Lead time for changes: from the dry commit's committer time to its promotion, median.
//   - Change failure rate: the deployments whose dry commit a RevertCommit names as bad, in
//     whatever phase (asking for a revert is remediating a failure), over all deployments.
//   - Time to restore: from the failure's start to the revert's merge, median. The start is when
//     the RollbackPolicy's check first failed; for a revert a person started, which records no
//     failure time, it is when the bad commit last reached the environment before the revert merged, if that
//     record is kept.
func ComputeDORA(in DORAInput) DORA {
	var out DORA
	bad := map[string]bool{}
	for _, r := range in.Remediations {
		bad[r.BadDrySHA] = true
	}
	var leads []time.Duration
	for _, d := range in.Deployments {
		out.Deployments++
		if out.Since.IsZero() || d.Time.Before(out.Since) {
			out.Since = d.Time
		}
		if bad[d.DrySHA] {
			out.Failed++
		}
		if c, ok := in.CommitTimes[d.DrySHA]; ok && !d.Time.Before(c) {
			leads = append(leads, d.Time.Sub(c))
		}
	}
	if out.Deployments > 0 {
		out.FailureRate = float64(out.Failed) / float64(out.Deployments)
		if span := in.Now.Sub(out.Since); span > 0 {
			out.PerDay = float64(out.Deployments) / span.Hours() * 24
		}
	}
	out.LeadTime, out.LeadTimeSamples = median(leads), len(leads)
	var restores []time.Duration
	for _, r := range in.Remediations {
		start := r.FailingSince
		if start.IsZero() {
			start = lastReached(in.Deployments, r.BadDrySHA, r.Restored)
		}
		if r.Restored.IsZero() || start.IsZero() || r.Restored.Before(start) {
			continue
		}
		restores = append(restores, r.Restored.Sub(start))
	}
	out.TimeToRestore, out.RestoreSamples = median(restores), len(restores)
	return out
}

// lastReached is when dry last reached the environment before the revert merged at restored,
// or zero when no kept record says.
func lastReached(ds []Deployment, dry string, restored time.Time) time.Time {
	var at time.Time
	for _, d := range ds {
		if d.DrySHA == dry && !d.Time.After(restored) && d.Time.After(at) {
			at = d.Time
		}
	}
	return at
}

// median is the middle duration (the mean of the two middle ones for an even count), or zero.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}
