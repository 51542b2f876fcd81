package view

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// checkKey finds the CommitStatus of one key on one SHA.
type checkKey struct{ key, sha string }

func checkIndex(list []*commitstatusv1alpha1.CommitStatus) map[checkKey]*commitstatusv1alpha1.CommitStatus {
	idx := make(map[checkKey]*commitstatusv1alpha1.CommitStatus, len(list))
	for _, cs := range list {
		if key := cs.Labels[commitstatusv1alpha1.KeyLabel]; key != "" {
			idx[checkKey{key, cs.Spec.SHA}] = cs
		}
	}
	return idx
}

// commit reads one side of an environment: its SHAs with links, and each key's phase in the
// promoter's words with the description of the CommitStatus that gave it.
func commit(c promoterv1alpha1.CommitState, links Links, idx map[checkKey]*commitstatusv1alpha1.CommitStatus) Commit {
	out := Commit{DrySHA: c.DrySHA, HydratedSHA: c.HydratedSHA, DryURL: links.Commit(c.DrySHA),
		HydratedURL: links.Commit(c.HydratedSHA), Subject: c.Subject, Phase: string(c.Phase)}
	if c.CommitTime != nil {
		t := c.CommitTime.Time
		out.Time = &t
	}
	for _, s := range c.CommitStatuses {
		check := Check{Key: s.Key, Phase: string(s.Phase)}
		if cs := idx[checkKey{s.Key, c.HydratedSHA}]; cs != nil {
			check.Description, check.URL = cs.Spec.Description, cs.Spec.URL
		}
		out.Checks = append(out.Checks, check)
	}
	return out
}

func gateHolds(sel *promoterv1alpha1.GateSelector, namespace string, lookup func(ns, name string) *gatingv1alpha1.Gate) []GateHold {
	if sel == nil {
		return nil
	}
	var out []GateHold
	for _, ref := range sel.Refs {
		ns := ref.Namespace
		if ns == "" {
			ns = namespace
		}
		h := GateHold{Namespace: ns, Name: ref.Name}
		g := lookup(ns, ref.Name)
		if g == nil {
			h.Missing = true
			out = append(out, h)
			continue
		}
		h.Open, h.Reason, h.Message = g.Status.Open, g.Status.Reason, g.Status.Message
		if t := g.Status.NextTransitionTime; t != nil {
			next := t.Time
			h.NextChange = &next
		}
		out = append(out, h)
	}
	return out
}

// reverts are the RevertCommits of one environment that still matter: not merged yet, or
// merged and holding a dry SHA back.
func reverts(strategy, branch string, list []*rollbackv1alpha1.RevertCommit) []Revert {
	var out []Revert
	for _, rc := range list {
		if rc.Spec.PromotionStrategyRef.Name != strategy || rc.Spec.ActiveBranch != branch {
			continue
		}
		if rc.Status.Phase == rollbackv1alpha1.RevertFailed {
			continue
		}
		r := Revert{Name: rc.Name, Phase: string(rc.Status.Phase), TargetDrySHA: rc.Status.TargetDrySHA,
			BadDrySHA: rc.Status.BadDrySHA, Reason: rc.Spec.Reason}
		if r.Phase == "" {
			r.Phase = string(rollbackv1alpha1.RevertPending)
		}
		if pr := rc.Status.PullRequest; pr != nil {
			r.PullRequestURL = pr.URL
		}
		out = append(out, r)
	}
	return out
}

// suspendedReason is the reason an object is suspended, or "".
func suspendedReason(obj metav1.Object, specSuspend bool) string {
	if s := suspend.Get(obj, specSuspend); s.Suspended {
		return s.Message
	}
	return ""
}

// problem is what the object's conditions say is wrong: Stalled, or Ready=False, in its words.
func problem(conds []metav1.Condition) string {
	if c := meta.FindStatusCondition(conds, conditions.Stalled); c != nil && c.Status == metav1.ConditionTrue {
		return c.Reason + ": " + c.Message
	}
	if c := meta.FindStatusCondition(conds, conditions.Ready); c != nil && c.Status == metav1.ConditionFalse {
		return strings.TrimSpace(c.Reason + ": " + c.Message)
	}
	return ""
}

// Until says how long until t, as a person would: "in 2h 5m", "in 40s", "now".
func Until(t, now time.Time) string {
	d := t.Sub(now).Round(time.Second)
	switch {
	case d <= 0:
		return "now"
	case d < time.Minute:
		return fmt.Sprintf("in %ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("in %dm", int(d.Round(time.Minute)/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("in %dh %dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("in %d days", int(d/(24*time.Hour)))
}

// Duration says a length of time as a person would: "40s", "12m", "3h 5m", "2d 4h".
func Duration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh %dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd %dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}
