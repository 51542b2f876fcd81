package promotionstrategy

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/promotion"
	"github.com/sluicehq/sluice/pkg/text"
)

// decision is what one reconcile does, decided from its observation alone.
type decision struct {
	// Status is the strategy's new status, written once every plan is applied.
	Status promoterv1alpha1.PromotionStrategyStatus
	Envs   []envPlan
	// Announce is made once the status write succeeded.
	Announce announcements
}

// envPlan is what one environment's objects should become.
type envPlan struct {
	PullRequest    pullRequestPlan
	ProposedCommit proposedCommitPlan
}

// announcements are the Events and metrics of what a status write records.
type announcements struct {
	Events     []event
	Promotions []promotionCount
	Blocks     []blockCount
}

type event struct {
	Type, Reason, Message string
}

// promotionCount is one merge into Environment; LeadTime is negative when unknown.
type promotionCount struct {
	Environment string
	External    bool
	LeadTime    time.Duration
}

// blockCount is one rule that newly blocks Environment's proposed change.
type blockCount struct {
	Environment string
	Rule        promotion.Rule
}

// envState is where an environment's promotion stands, for the strategy's conditions.
type envState int

const (
	// statePromoted: nothing is proposed.
	statePromoted envState = iota
	// stateMerging: a merge the controller asked for is under way.
	stateMerging
	// stateBlocked: a rule, check, gate or rollback holds the proposed change.
	stateBlocked
	// stateWaiting: the change may be merged and waits for a person.
	stateWaiting
	// stateClosed: the pull request of the proposed change was closed unmerged.
	stateClosed
)

// Bounds of what one environment's status carries.
const (
	maxBlocked      = 1024
	maxBlocks       = 16
	maxBlockMessage = 512
)

// decide turns an observation into the strategy's new status, each environment's objects and
// what to announce. It reads nothing and writes nothing.
func decide(o *observation) decision {
	ps := o.Strategy
	previous := map[string]promoterv1alpha1.EnvironmentStatus{}
	for _, e := range ps.Status.Environments {
		previous[e.Branch] = e
	}
	d := decision{Status: *ps.Status.DeepCopy()}
	statuses := make([]promoterv1alpha1.EnvironmentStatus, len(o.Envs))
	rules := make([]promotion.Environment, len(o.Envs))
	for i, e := range o.Envs {
		statuses[i] = environmentStatus(previous[e.Spec.Branch], e, o.Now)
		rules[i] = ruleInput(e)
	}
	states := make([]envState, len(o.Envs))
	for i, e := range o.Envs {
		verdict := promotion.Evaluate(o.Graph, rules, i, o.Order)
		var plan envPlan
		plan, states[i] = decideEnvironment(ps, e, verdict, &statuses[i], previous[e.Spec.Branch].Blocked, o.Now, &d.Announce)
		if !o.Fetched {
			// The open pull requests are looked at after a fetch only: what they look for (a merge
			// or close outside Sluice) moves git or comes with the SCM's webhook, which fetches.
			// Asked after every reconcile, each cost an SCM call (a GET of the pull request) per
			// reconcile that followed Sluice's own writes, when nothing had changed.
			plan.PullRequest.Enqueue = ""
		}
		d.Envs = append(d.Envs, plan)
	}
	d.Status.Environments = statuses
	d.Status.ObservedGeneration = ps.Generation
	if o.Fetched {
		// Only a fetch moves it. Stamped on every reconcile, it changed the status once a second,
		// so the strategy's own status write brought it back, for ever, whenever its queue took
		// longer than a second to come round (a wave of a hundred strategies on an SCM).
		now := metav1.NewTime(o.Now)
		d.Status.LastFetchTime = &now
	}
	if v, ok := ps.Annotations[promoterv1alpha1.RefreshAnnotation]; ok {
		d.Status.LastHandledRefresh = v
	}
	setConditions(&d.Status, ps.Generation, o.Envs, states)
	return d
}

// environmentStatus is what an environment reports before its pull request is looked at.
func environmentStatus(prev promoterv1alpha1.EnvironmentStatus, e environment, now time.Time) promoterv1alpha1.EnvironmentStatus {
	st := *prev.DeepCopy()
	st.Branch = e.Spec.Branch
	st.Active, st.Proposed = e.Active, e.Proposed
	st.Active.CommitStatuses, st.Active.Phase = phases(e.ActiveChecks), phaseIf(e.Active.HydratedSHA, e.ActiveChecks)
	st.Proposed.CommitStatuses, st.Proposed.Phase = phases(e.ProposedChecks), phaseIf(e.Proposed.HydratedSHA, e.ProposedChecks)
	if e.Active.HydratedSHA != "" && promotion.Aggregate(e.ActiveChecks) == promotion.Success {
		st.LastHealthyDrySHAs = promotion.RecordHealthy(st.LastHealthyDrySHAs, e.Active.DrySHA, e.Active.HydratedSHA, now)
	}
	return st
}

// ruleInput is what the rules need to know of an environment.
func ruleInput(e environment) promotion.Environment {
	r := promotion.Environment{
		Branch:         e.Spec.Branch,
		Active:         promotion.Commit{DrySHA: e.Active.DrySHA, HydratedSHA: e.Active.HydratedSHA},
		Proposed:       promotion.Commit{DrySHA: e.Proposed.DrySHA, HydratedSHA: e.Proposed.HydratedSHA},
		ActiveChecks:   e.ActiveChecks,
		ProposedChecks: e.ProposedChecks,
		Gates:          e.Gates,
		Holds:          e.Holds,
	}
	if e.ProposedMerged {
		// The environment branch already holds the proposed commit: nothing is proposed.
		r.Proposed = r.Active
	}
	return r
}

// decideEnvironment decides one environment's pull request, blocks, history and ProposedCommit.
func decideEnvironment(ps *promoterv1alpha1.PromotionStrategy, e environment, v promotion.Verdict, st *promoterv1alpha1.EnvironmentStatus, prevBlocked string, now time.Time, ann *announcements) (envPlan, envState) {
	if e.PullRequest != nil && e.PullRequest.Status.State == promoterv1alpha1.PullRequestMerged {
		recordMerge(e, st, now, ann)
	}
	st.Eligible = v.Eligible
	prPlan, state := decidePullRequest(ps, e, v, st)
	st.Blocks, st.Blocked = blocks(v, state == stateClosed, e.Spec.Branch)
	if st.Blocked != "" && st.Blocked != prevBlocked {
		announceBlock(e, st.Blocks, st.Blocked, ann)
	}
	return envPlan{PullRequest: prPlan, ProposedCommit: decideProposedCommit(ps, e, v, st)}, state
}

// recordMerge adds a merged pull request to history, once, and announces it.
func recordMerge(e environment, st *promoterv1alpha1.EnvironmentStatus, now time.Time, ann *announcements) {
	pr := e.PullRequest
	rec := promoterv1alpha1.PromotionRecord{
		HydratedSHA: pr.Status.MergedHeadSHA, MergeSHA: pr.Status.MergeSHA, Time: metav1.NewTime(now),
		PullRequest: pr.Name, PullRequestNumber: pullRequestNumber(pr), PullRequestURL: pr.Status.URL,
		External: pr.Status.MergedExternally,
	}
	if pr.Status.MergeTime != nil {
		rec.Time = *pr.Status.MergeTime
	}
	for _, h := range st.History {
		if h.MergeSHA == rec.MergeSHA && h.HydratedSHA == rec.HydratedSHA {
			return
		}
	}
	lead := time.Duration(-1)
	if e.Merged != nil {
		rec.DrySHA = e.Merged.DrySHA
		if !e.Merged.DryTime.IsZero() && !rec.Time.Time.Before(e.Merged.DryTime) {
			lead = rec.Time.Sub(e.Merged.DryTime)
		}
	}
	st.History = promotion.RecordPromotion(st.History, rec)
	branch := e.Spec.Branch
	if rec.External {
		ann.event(EventPullRequestMergedExternally, "%s: %s (dry %s) was merged outside Sluice", branch, text.ShortSHA(rec.HydratedSHA), text.ShortSHA(rec.DrySHA))
	}
	ann.event(EventPromotionCompleted, "%s: promoted dry %s (merge %s)", branch, text.ShortSHA(rec.DrySHA), text.ShortSHA(rec.MergeSHA))
	ann.Promotions = append(ann.Promotions, promotionCount{Environment: branch, External: rec.External, LeadTime: lead})
}

// blocks lists what holds the change, and says it in one line. closed adds that the pull
// request was closed unmerged.
func blocks(v promotion.Verdict, closed bool, branch string) ([]promoterv1alpha1.PromotionBlock, string) {
	all := v.Blocks
	if closed {
		all = append([]promotion.Block{{Rule: promoterv1alpha1.BlockPullRequestClosed, Environment: branch,
			Message: "the pull request was closed without merging; push a new proposed commit to open another"}}, all...)
	}
	if len(all) == 0 {
		return nil, ""
	}
	out := make([]promoterv1alpha1.PromotionBlock, 0, min(len(all), maxBlocks))
	msgs := make([]string, len(all))
	for i, b := range all {
		msgs[i] = b.Message
		if i < maxBlocks {
			out = append(out, promoterv1alpha1.PromotionBlock{Rule: b.Rule, Environment: b.Environment, Message: text.Truncate(b.Message, maxBlockMessage)})
		}
	}
	return out, text.Truncate(strings.Join(msgs, "; "), maxBlocked)
}

// announceBlock announces a block that is new or changed: held after a rollback, or blocked.
func announceBlock(e environment, list []promoterv1alpha1.PromotionBlock, line string, ann *announcements) {
	branch, short := e.Spec.Branch, text.ShortSHA(e.Proposed.HydratedSHA)
	seen := map[promotion.Rule]bool{}
	for _, b := range list {
		if !seen[b.Rule] {
			seen[b.Rule] = true
			ann.Blocks = append(ann.Blocks, blockCount{Environment: branch, Rule: b.Rule})
		}
	}
	for _, b := range list {
		if b.Rule == promoterv1alpha1.BlockHeldAfterRollback {
			ann.event(EventPromotionHeldAfterRollback, "%s: %s %s", branch, short, b.Message)
			return
		}
	}
	ann.event(EventPromotionBlocked, "%s: %s blocked by %s: %s", branch, short, list[0].Rule, line)
}

func (a *announcements) event(reason, format string, args ...any) {
	a.Events = append(a.Events, event{Type: "Normal", Reason: reason, Message: fmt.Sprintf(format, args...)})
}

// setConditions summarizes the environments: Ready only when nothing is left to promote.
func setConditions(st *promoterv1alpha1.PromotionStrategyStatus, gen int64, envs []environment, states []envState) {
	var merging, blocked, waiting []string
	for i, s := range states {
		switch s {
		case stateMerging:
			merging = append(merging, envs[i].Spec.Branch)
		case stateBlocked, stateClosed:
			blocked = append(blocked, envs[i].Spec.Branch)
		case stateWaiting:
			waiting = append(waiting, envs[i].Spec.Branch)
		}
	}
	summary := summarize(envs)
	if len(blocked) > 0 {
		summary += "; blocked: " + strings.Join(blocked, ", ")
	}
	if len(waiting) > 0 {
		summary += "; waiting for a merge: " + strings.Join(waiting, ", ")
	}
	switch {
	case len(merging) > 0:
		conditions.MarkReconciling(&st.Conditions, gen, ReasonPromoting, summary+"; merging into "+strings.Join(merging, ", "))
	case len(blocked) > 0:
		conditions.MarkNotReady(&st.Conditions, gen, ReasonBlocked, summary)
	case len(waiting) > 0:
		conditions.MarkNotReady(&st.Conditions, gen, ReasonWaitingForMerge, summary)
	default:
		conditions.MarkReady(&st.Conditions, gen, ReasonPromoted, summary)
	}
}

// summarize says which dry commit each environment runs.
func summarize(envs []environment) string {
	parts := make([]string, len(envs))
	for i, e := range envs {
		parts[i] = e.Spec.Branch + "@" + orDash(text.ShortSHA(e.Active.DrySHA))
	}
	return strings.Join(parts, " ")
}

func phases(checks []promotion.Check) []promoterv1alpha1.CommitStatusPhase {
	if len(checks) == 0 {
		return nil
	}
	out := make([]promoterv1alpha1.CommitStatusPhase, len(checks))
	for i, c := range checks {
		p := c.Phase
		if p == "" {
			p = promotion.Pending
		}
		out[i] = promoterv1alpha1.CommitStatusPhase{Key: c.Key, Phase: p}
	}
	return out
}

func phaseIf(sha string, checks []promotion.Check) promotion.Phase {
	if sha == "" {
		return ""
	}
	return promotion.Aggregate(checks)
}
