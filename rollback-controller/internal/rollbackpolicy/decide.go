package rollbackpolicy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/text"
)

// Decisions about a failing check, as the decisions metric counts them.
const (
	DecisionFired           = "fired"
	DecisionCooldown        = "cooldown"
	DecisionOutsideWindow   = "outside_window"
	DecisionAlreadyReverted = "already_reverted"
	DecisionRunsARevert     = "runs_a_revert"
	DecisionNoPromotion     = "no_promotion"
	DecisionNoTarget        = "no_target"
	DecisionWaiting         = "waiting"
)

// Failure is a failing check on the environment's active commit.
type Failure struct {
	Key         string
	Description string
}

// Rules are the policy's trigger settings.
type Rules struct {
	Threshold, Window, Cooldown time.Duration
}

// Observed is what one reconcile knows of one environment.
type Observed struct {
	Env promoterv1alpha1.EnvironmentStatus
	// Failure is the first failing key on Env.Active.HydratedSHA, nil when none fails.
	Failure *Failure
	// Previous is this environment's entry in the policy's status.
	Previous rollbackv1alpha1.PolicyEnvironmentStatus
	// Reverts are the RevertCommits of this strategy's environment, any author.
	Reverts []*rollbackv1alpha1.RevertCommit
	// Policy names the policy, to find the rollbacks it made.
	Policy string
	// RevertAgain is the dry SHA the policy's rollback.sluice.dev/revert-again annotation names:
	// it may be reverted once more.
	RevertAgain string
}

// Verdict is what to do for one environment.
type Verdict struct {
	Status rollbackv1alpha1.PolicyEnvironmentStatus
	// Fire is set when a RevertCommit must be created now.
	Fire *Fire
	// Decision is the metric's label when a check fails ("" when none does).
	Decision string
	// RequeueAfter > 0 asks to look again then (the threshold or the cooldown ends).
	RequeueAfter time.Duration
}

// Fire describes the RevertCommit to create.
type Fire struct {
	BadDrySHA string
	// TargetDrySHA is the newest healthy dry SHA that is neither the bad one nor one reverted.
	TargetDrySHA string
	// Again is set for the one extra revert the revert-again annotation allows.
	Again  bool
	Key    string
	Reason string
	Since  metav1.MicroTime
}

// Decide applies the policy to one environment. It is pure: everything it needs is in o.
func Decide(o Observed, rules Rules, now time.Time) Verdict {
	active := o.Env.Active
	v := Verdict{Status: rollbackv1alpha1.PolicyEnvironmentStatus{
		Branch: o.Env.Branch, RevertedDrySHAs: revertedDrySHAs(o), LastRollback: lastRollback(o),
	}}
	if active.DrySHA == "" || active.HydratedSHA == "" {
		v.Status.Message = "waiting for the strategy to report the environment's active dry commit"
		return v
	}
	if o.Failure == nil {
		v.Status.Message = fmt.Sprintf("no check failing on dry %s", text.ShortSHA(active.DrySHA))
		return v
	}
	since := metav1.NewMicroTime(now)
	if f := o.Previous.Failing; f != nil && f.HydratedSHA == active.HydratedSHA {
		since = f.Since
	}
	v.Status.Failing = &rollbackv1alpha1.ObservedFailure{DrySHA: active.DrySHA, HydratedSHA: active.HydratedSHA, Key: o.Failure.Key, Since: since}
	failing := fmt.Sprintf("%s failing on dry %s since %s", o.Failure.Key, text.ShortSHA(active.DrySHA), since.UTC().Format(time.RFC3339))

	again := o.RevertAgain == active.DrySHA
	if held := alreadyReverted(o, v.Status.RevertedDrySHAs, again); held != "" {
		return v.hold(DecisionAlreadyReverted, failing+"; "+held)
	}
	promoted, ok := promotionOf(o.Env, active.DrySHA)
	if !ok {
		return v.hold(DecisionNoPromotion, fmt.Sprintf("%s; no promotion of it is in the strategy's history, so it is left to people", failing))
	}
	if name := restoredBy(o.Reverts, active.DrySHA, promoted); name != "" {
		return v.hold(DecisionRunsARevert, fmt.Sprintf("%s; the environment runs the revert made by RevertCommit %s, and a revert is never rolled back automatically", failing, name))
	}
	if since.Sub(promoted.Time.Time) > rules.Window {
		return v.hold(DecisionOutsideWindow, fmt.Sprintf("%s; it started more than %s after the promotion merged (%s), outside the window",
			failing, rules.Window, promoted.Time.UTC().Format(time.RFC3339)))
	}
	if due := since.Add(rules.Threshold); now.Before(due) {
		v.Decision, v.RequeueAfter = DecisionWaiting, due.Sub(now)
		v.Status.Message = fmt.Sprintf("%s; rolls back at %s unless it recovers", failing, due.UTC().Format(time.RFC3339))
		return v
	}
	if last := v.Status.LastRollback; last != nil && now.Before(last.Time.Add(rules.Cooldown)) {
		end := last.Time.Add(rules.Cooldown)
		v = v.hold(DecisionCooldown, fmt.Sprintf("%s; in cooldown after RevertCommit %s until %s", failing, last.RevertCommit, end.UTC().Format(time.RFC3339)))
		v.RequeueAfter = end.Sub(now)
		return v
	}
	target := targetOf(o.Env, active.DrySHA, v.Status.RevertedDrySHAs, o.Reverts)
	if target == "" {
		return v.hold(DecisionNoTarget, fmt.Sprintf("%s; no other healthy dry SHA, not itself reverted, is recorded for the environment to go back to", failing))
	}
	v.Decision = DecisionFired
	v.Fire = &Fire{BadDrySHA: active.DrySHA, TargetDrySHA: target, Again: again, Key: o.Failure.Key, Since: since,
		Reason: fmt.Sprintf("%s failed in %s on dry %s: %s", o.Failure.Key, o.Env.Branch, text.ShortSHA(active.DrySHA), o.Failure.Description)}
	v.Status.Message = failing + "; rolling back"
	return v
}

func (v Verdict) hold(decision, message string) Verdict {
	v.Decision, v.Status.Message = decision, message
	return v
}

// lastRollback is the newest rollback of the environment by this policy: the one its status
// recorded, or a RevertCommit it made that is newer (created by an attempt that did not live to
// record it). Deleting a RevertCommit does not reset it, so the cooldown holds.
func lastRollback(o Observed) *rollbackv1alpha1.PolicyRollback {
	last := o.Previous.LastRollback
	for _, rc := range o.Reverts {
		if rc.Labels[rollbackv1alpha1.PolicyLabel] != o.Policy {
			continue
		}
		if last == nil || rc.CreationTimestamp.After(last.Time.Time) {
			last = &rollbackv1alpha1.PolicyRollback{RevertCommit: rc.Name, BadDrySHA: badOf(rc), Time: rc.CreationTimestamp}
		}
	}
	return last
}

// revertedDrySHAs is the status record of bad dry SHAs this policy reverted, with any of its
// RevertCommits the record lacks (a crash between the create and the status write) added.
func revertedDrySHAs(o Observed) []string {
	out := o.Previous.RevertedDrySHAs
	for _, rc := range o.Reverts {
		if bad := badOf(rc); rc.Labels[rollbackv1alpha1.PolicyLabel] == o.Policy && bad != "" && !slices.Contains(out, bad) {
			out = append([]string{bad}, out...)
		}
	}
	if len(out) > rollbackv1alpha1.MaxRevertedDrySHAs {
		out = out[:rollbackv1alpha1.MaxRevertedDrySHAs]
	}
	return out
}

// alreadyReverted says why dry must not be reverted again, or "". Never twice: not while a
// RevertCommit of it exists (by anyone), nor once the policy's status records it, unless the
// revert-again annotation names it; then once more only.
func alreadyReverted(o Observed, reverted []string, again bool) string {
	dry := o.Env.Active.DrySHA
	if again {
		name := RevertCommitName(againPolicy(o.Policy), o.Env.Branch, dry)
		for _, rc := range o.Reverts {
			if rc.Name == name {
				return fmt.Sprintf("reverted again by RevertCommit %s, as %s allowed, and not a third time", name, rollbackv1alpha1.RevertAgainAnnotation)
			}
		}
		return ""
	}
	if name := revertOf(o.Reverts, dry); name != "" {
		return fmt.Sprintf("already reverted by RevertCommit %s, never twice", name)
	}
	if slices.Contains(reverted, dry) {
		return fmt.Sprintf("already reverted by this policy (status.environments[].revertedDrySHAs), never twice; to revert it again, annotate the policy %s=%s",
			rollbackv1alpha1.RevertAgainAnnotation, dry)
	}
	return ""
}

// againPolicy is the policy name the RevertCommit of a revert-again is named after, so its name
// differs from the first revert's and is still the same on every attempt.
func againPolicy(policy string) string { return policy + "-again" }

// revertOf names a RevertCommit, by anyone, that reverts (or reverted, or was refused to revert)
// bad dry SHA dry.
func revertOf(reverts []*rollbackv1alpha1.RevertCommit, dry string) string {
	for _, rc := range reverts {
		if badOf(rc) == dry {
			return rc.Name
		}
	}
	return ""
}

func badOf(rc *rollbackv1alpha1.RevertCommit) string {
	if rc.Status.BadDrySHA != "" {
		return rc.Status.BadDrySHA
	}
	return rc.Spec.BadDrySHA
}

// promotionOf is the newest promotion of dry into the environment.
func promotionOf(env promoterv1alpha1.EnvironmentStatus, dry string) (promoterv1alpha1.PromotionRecord, bool) {
	for _, h := range env.History {
		if h.DrySHA == dry {
			return h, true
		}
	}
	return promoterv1alpha1.PromotionRecord{}, false
}

// restoredBy names a merged RevertCommit that brought the environment back to dry after its
// last promotion: the environment then runs a revert, not a promotion.
func restoredBy(reverts []*rollbackv1alpha1.RevertCommit, dry string, promoted promoterv1alpha1.PromotionRecord) string {
	for _, rc := range reverts {
		st := rc.Status
		if st.Phase == rollbackv1alpha1.RevertMerged && st.TargetDrySHA == dry && st.MergeTime != nil && !st.MergeTime.Before(&promoted.Time) {
			return rc.Name
		}
	}
	return ""
}

// targetOf is the newest healthy dry SHA of the environment to go back to: not the bad one, and
// not one that was itself reverted (by this policy, or by any RevertCommit that merged).
func targetOf(env promoterv1alpha1.EnvironmentStatus, bad string, reverted []string, reverts []*rollbackv1alpha1.RevertCommit) string {
	for _, h := range env.LastHealthyDrySHAs {
		if h.SHA != bad && !slices.Contains(reverted, h.SHA) && !mergedRevertOf(reverts, h.SHA) {
			return h.SHA
		}
	}
	return ""
}

func mergedRevertOf(reverts []*rollbackv1alpha1.RevertCommit, dry string) bool {
	for _, rc := range reverts {
		if rc.Status.Phase == rollbackv1alpha1.RevertMerged && badOf(rc) == dry {
			return true
		}
	}
	return false
}

// plan is what one reconcile of a policy does, decided from its observation alone.
type plan struct {
	// environments is the new status.environments; an entry that fires gets its lastRollback
	// once its RevertCommit is created.
	environments []rollbackv1alpha1.PolicyEnvironmentStatus
	// summary is the Ready message.
	summary string
	// creates are the RevertCommits to create, in the policy's order of environments.
	creates []revertCreate
	// triggers are the label values of each new decision, counted once the status is written.
	triggers [][]string
	// requeueAfter > 0 asks to look again then: the soonest threshold or cooldown end.
	requeueAfter time.Duration
}

// revertCreate is one RevertCommit to create, for environments[env].
type revertCreate struct {
	env          int
	revertCommit *rollbackv1alpha1.RevertCommit
}

// decide applies the policy to every observed environment: what each status becomes, and the
// RevertCommits to create. It is pure.
func decide(o observation) plan {
	p, ps := o.policy, o.strategy
	var pl plan
	var summary []string
	for _, e := range o.envs {
		v := Decide(e, o.rules, o.now)
		branch := e.Env.Branch
		if v.Fire != nil {
			if !slices.Contains(v.Status.RevertedDrySHAs, v.Fire.BadDrySHA) {
				v.Status.RevertedDrySHAs = prepend(v.Status.RevertedDrySHAs, v.Fire.BadDrySHA)
			}
			pl.creates = append(pl.creates, revertCreate{env: len(pl.environments), revertCommit: revertCommitFor(p, ps, branch, v.Fire)})
		}
		if v.Decision != "" && v.Decision != DecisionWaiting && changed(e.Previous, v.Status) {
			pl.triggers = append(pl.triggers, []string{p.Namespace, ps.Name, branch, v.Decision})
		}
		if v.RequeueAfter > 0 && (pl.requeueAfter == 0 || v.RequeueAfter < pl.requeueAfter) {
			pl.requeueAfter = v.RequeueAfter
		}
		v.Status.Message = text.Truncate(v.Status.Message, 1024)
		pl.environments = append(pl.environments, v.Status)
		summary = append(summary, branch+": "+v.Status.Message)
	}
	pl.summary = strings.Join(summary, "; ")
	return pl
}

// changed tells a new decision from one already counted: the message carries it.
func changed(before, after rollbackv1alpha1.PolicyEnvironmentStatus) bool {
	return before.Message != after.Message
}

func prepend(list []string, sha string) []string {
	out := append([]string{sha}, list...)
	if len(out) > rollbackv1alpha1.MaxRevertedDrySHAs {
		out = out[:rollbackv1alpha1.MaxRevertedDrySHAs]
	}
	return out
}
