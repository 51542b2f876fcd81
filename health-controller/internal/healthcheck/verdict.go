package healthcheck

// The verdict turns the health of each target into the health of the set: counts, the bounded
// list of resources, the timeout and soak clocks, and the commit status phase. It is part of
// decide, and as pure: time comes in as an argument.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/pkg/text"
)

// State is the health of the set.
type State string

// The states of a set, in the order they are decided.
const (
	// Failed: a target has Failed.
	Failed State = healthv1alpha1.ReasonFailed
	// TimedOut: the set has been unhealthy for longer than the timeout.
	TimedOut State = healthv1alpha1.ReasonTimedOut
	// Healthy: every target Current, for the soak time.
	Healthy State = healthv1alpha1.ReasonHealthy
	// Soaking: every target Current, soak time not over.
	Soaking State = healthv1alpha1.ReasonSoaking
	// NoTargets: the targets matched nothing yet.
	NoTargets State = healthv1alpha1.ReasonNoTargets
	// Progressing: some targets are InProgress, Unknown or NotFound.
	Progressing State = healthv1alpha1.ReasonProgressing
)

// Phase is the commit status verdict: pending, success or failure.
type Phase string

// Commit status phases, as commitstatus.sluice.dev spells them.
const (
	Pending Phase = "pending"
	Success Phase = "success"
	Failure Phase = "failure"
)

// verdictInput is everything the verdict depends on.
type verdictInput struct {
	Now        time.Time
	Generation int64
	// Revision is the revision the targets run, empty when there is no revision source.
	Revision string
	// Unsettled is true while the revision source has not finished applying Revision: the
	// targets may be the previous revision's objects, so their health is credited to no revision
	// (Resources then holds the source itself, InProgress, so the set is never Healthy). Only
	// the timeout turns it into a failure: Revision did not finish applying in time.
	Unsettled bool
	// Previous is the status before this evaluation.
	Previous healthv1alpha1.HealthCheckStatus
	// Resources is the health of every target, in any order.
	Resources []healthv1alpha1.ResourceHealth
	Timeout   time.Duration
	SoakTime  time.Duration
}

// verdict is the health of the set.
type verdict struct {
	State State
	Phase Phase
	// Message explains the state to a person: counts and the least healthy target.
	Message string
	// Description is a one-line summary of the counts for the commit status.
	Description string
	// RequeueAfter is when the verdict changes by time alone (soak over, timeout reached); zero
	// when only events can change it.
	RequeueAfter time.Duration

	Healthy             bool
	Summary             string
	Counts              healthv1alpha1.HealthCounts
	Resources           []healthv1alpha1.ResourceHealth
	LastHealthyTime     *metav1.Time
	LastHealthyRevision string
	HealthySince        *metav1.Time
	UnhealthySince      *metav1.Time
}

// judge computes the verdict.
//
// The clocks restart when the revision or the spec generation changes: a new revision must prove
// itself for the whole soak time, and gets the whole timeout to converge.
func judge(in verdictInput) verdict {
	prev := in.Previous
	restart := prev.ObservedGeneration != in.Generation || prev.ObservedRevision != in.Revision
	now := metav1.NewTime(in.Now.Truncate(time.Second))
	resources := slices.Clone(in.Resources)

	allCurrent := len(resources) > 0
	for _, r := range resources {
		if r.Status != healthv1alpha1.StatusCurrent {
			allCurrent = false
			break
		}
	}

	v := verdict{LastHealthyTime: prev.LastHealthyTime, LastHealthyRevision: prev.LastHealthyRevision}
	timedOut := false
	if allCurrent {
		v.HealthySince = since(prev.HealthySince, restart, now)
		soaked := in.Now.Sub(v.HealthySince.Time)
		v.Healthy = soaked >= in.SoakTime
		if !v.Healthy {
			v.RequeueAfter = in.SoakTime - soaked
		}
		if v.Healthy && (!prev.Healthy || restart) {
			v.LastHealthyTime = &now
			v.LastHealthyRevision = in.Revision
		}
	} else {
		v.UnhealthySince = since(prev.UnhealthySince, restart, now)
		elapsed := in.Now.Sub(v.UnhealthySince.Time)
		timedOut = in.Timeout > 0 && elapsed >= in.Timeout
		if !timedOut && in.Timeout > 0 {
			v.RequeueAfter = in.Timeout - elapsed
		}
	}
	if timedOut {
		for i, r := range resources {
			if r.Status == healthv1alpha1.StatusInProgress {
				resources[i].Status = healthv1alpha1.StatusFailed
				resources[i].Message = fmt.Sprintf("still in progress after the %s timeout: %s", in.Timeout, r.Message)
			}
		}
	}

	sortLeastHealthyFirst(resources)
	v.Counts = count(resources)
	v.Summary = fmt.Sprintf("%d/%d", v.Counts.Current, v.Counts.Total)
	v.Description = describe(v.Counts)
	v.Resources = bounded(resources)

	switch {
	case v.Counts.Failed > 0 && !timedOut && !in.Unsettled:
		v.State, v.Phase = Failed, Failure
	case timedOut:
		v.State, v.Phase = TimedOut, Failure
	case v.Healthy:
		v.State, v.Phase = Healthy, Success
	case allCurrent:
		v.State, v.Phase = Soaking, Pending
	case v.Counts.Total == 0:
		v.State, v.Phase = NoTargets, Pending
	default:
		v.State, v.Phase = Progressing, Pending
	}
	v.Message = message(v, in, resources)
	return v
}

func since(prev *metav1.Time, restart bool, now metav1.Time) *metav1.Time {
	if prev == nil || restart {
		return &now
	}
	t := *prev
	return &t
}

// rank orders statuses from least to most healthy.
var rank = map[healthv1alpha1.ResourceStatus]int{
	healthv1alpha1.StatusFailed:     0,
	healthv1alpha1.StatusUnknown:    1,
	healthv1alpha1.StatusNotFound:   2,
	healthv1alpha1.StatusInProgress: 3,
	healthv1alpha1.StatusCurrent:    4,
}

func sortLeastHealthyFirst(rs []healthv1alpha1.ResourceHealth) {
	slices.SortStableFunc(rs, func(a, b healthv1alpha1.ResourceHealth) int {
		return cmp.Or(
			cmp.Compare(rank[a.Status], rank[b.Status]),
			cmp.Compare(a.APIVersion, b.APIVersion),
			cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Name, b.Name),
		)
	})
}

func count(rs []healthv1alpha1.ResourceHealth) healthv1alpha1.HealthCounts {
	c := healthv1alpha1.HealthCounts{Total: int32(len(rs))}
	for _, r := range rs {
		switch r.Status {
		case healthv1alpha1.StatusCurrent:
			c.Current++
		case healthv1alpha1.StatusInProgress:
			c.InProgress++
		case healthv1alpha1.StatusFailed:
			c.Failed++
		case healthv1alpha1.StatusUnknown:
			c.Unknown++
		case healthv1alpha1.StatusNotFound:
			c.NotFound++
		}
	}
	return c
}

func bounded(rs []healthv1alpha1.ResourceHealth) []healthv1alpha1.ResourceHealth {
	if len(rs) > healthv1alpha1.MaxResources {
		rs = rs[:healthv1alpha1.MaxResources]
	}
	out := make([]healthv1alpha1.ResourceHealth, len(rs))
	for i, r := range rs {
		r.Message = text.TruncateBytes(r.Message, healthv1alpha1.MaxResourceMessage)
		out[i] = r
	}
	return out
}

// describe is a short line such as "1 Failed, 2 Current of 3".
func describe(c healthv1alpha1.HealthCounts) string {
	if c.Total > 0 && c.Current == c.Total {
		return fmt.Sprintf("%d/%d Current", c.Current, c.Total)
	}
	var parts []string
	for _, p := range []struct {
		n    int32
		name string
	}{{c.Failed, "Failed"}, {c.Unknown, "Unknown"}, {c.NotFound, "NotFound"}, {c.InProgress, "InProgress"}, {c.Current, "Current"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.name))
		}
	}
	if len(parts) == 0 {
		return "no objects matched the targets"
	}
	return strings.Join(parts, ", ") + fmt.Sprintf(" of %d", c.Total)
}

func message(v verdict, in verdictInput, sorted []healthv1alpha1.ResourceHealth) string {
	switch v.State {
	case Healthy:
		if in.SoakTime > 0 {
			return fmt.Sprintf("%s, for at least %s", v.Description, in.SoakTime)
		}
		return v.Description
	case Soaking:
		return fmt.Sprintf("%s; soaking for %s more", v.Description, v.RequeueAfter.Round(time.Second))
	case NoTargets:
		return "no objects matched the targets yet"
	}
	msg := v.Description
	if in.Unsettled && v.State == Progressing {
		msg = "no verdict while the revision source has not finished applying " + in.Revision + ": " + msg
	}
	if v.State == TimedOut {
		msg = fmt.Sprintf("not healthy after the %s timeout: %s", in.Timeout, msg)
	}
	if len(sorted) > 0 && sorted[0].Status != healthv1alpha1.StatusCurrent {
		r := sorted[0]
		msg += fmt.Sprintf("; %s %s %s: %s", r.Status, r.Kind, resourceName(r), r.Message)
	}
	return msg
}

// resourceName is namespace/name, or name for cluster-scoped objects.
func resourceName(r healthv1alpha1.ResourceHealth) string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}
