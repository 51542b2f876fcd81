package promotion

import (
	"fmt"
	"strings"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/text"
)

// Phase is the verdict of a check.
type Phase = commitstatusv1alpha1.CommitStatusPhase

// Phases of a check.
const (
	Pending = commitstatusv1alpha1.CommitStatusPending
	Success = commitstatusv1alpha1.CommitStatusSuccess
	Failure = commitstatusv1alpha1.CommitStatusFailure
)

// Rule names what blocked a promotion; it is the rule of status.environments[].blocks.
type Rule = promoterv1alpha1.BlockRule

const (
	// RuleNoMovingBackwards is rule 1: the proposed dry SHA is older than what a later environment runs.
	RuleNoMovingBackwards = promoterv1alpha1.BlockNoMovingBackwards
	// RuleEarlierEnvironmentActive is rule 2: an earlier environment is not active on the proposed dry SHA.
	RuleEarlierEnvironmentActive = promoterv1alpha1.BlockEarlierEnvironmentActive
	// RuleEarlierEnvironmentChecks is rule 3: an active commit status of an earlier environment does not pass.
	RuleEarlierEnvironmentChecks = promoterv1alpha1.BlockEarlierEnvironmentChecks
	// RuleProposedChecks is rule 4: a proposed commit status of the proposed commit does not pass.
	RuleProposedChecks = promoterv1alpha1.BlockProposedChecks
	// RuleGates: a gate of the environment holds.
	RuleGates = promoterv1alpha1.BlockGates
	// RuleUnknownDrySHA: the proposed commit does not say which dry commit it was rendered from.
	RuleUnknownDrySHA = promoterv1alpha1.BlockUnknownDrySHA
	// RuleHeldAfterRollback: a revert of this environment holds the proposed dry SHA back.
	RuleHeldAfterRollback = promoterv1alpha1.BlockHeldAfterRollback
)

// Order is where one dry commit stands relative to another on the dry branch.
type Order int

const (
	// Same commit.
	Same Order = iota
	// Newer: the first descends from the second.
	Newer
	// Older: the second descends from the first.
	Older
	// Unrelated: neither descends from the other.
	Unrelated
)

// DryOrder compares dry commits on the dry branch: Compare(x, y) says where x stands relative
// to y. An error (a commit no longer on the branch, say) blocks rule 1.
type DryOrder interface {
	Compare(x, y string) (Order, error)
}

// Check is the aggregate phase of one commit-status key on one commit.
type Check struct {
	Key   string
	Phase Phase
	// Message is the description of the CommitStatus that decides a phase other than success
	// (a failing one first), so a block says why, as the check's author put it: a health verdict
	// from another cluster, or a CI check's summary, imported from the SCM.
	Message string
}

// because is ": message" for a check that carries one.
func (c Check) because() string {
	if c.Message == "" {
		return ""
	}
	return ": " + text.Truncate(c.Message, 200)
}

// Commit is a hydrated commit and the dry commit it was rendered from.
type Commit struct {
	DrySHA      string
	HydratedSHA string
}

// GateVerdict is whether the environment's gates allow, with the reason when they do not.
type GateVerdict struct {
	Allowed bool
	Message string
}

// Environment is what the rules need to know about one environment.
type Environment struct {
	Branch   string
	Active   Commit
	Proposed Commit
	// ActiveChecks are the environment's active commit statuses on Active.HydratedSHA.
	ActiveChecks []Check
	// ProposedChecks are the environment's proposed commit statuses on Proposed.HydratedSHA.
	ProposedChecks []Check
	// Gates is nil when the environment has no gates.
	Gates *GateVerdict
	// Holds are the reverts of this environment that keep a dry SHA, and every older one, out.
	Holds []Hold
}

// Hold keeps a reverted dry SHA, and every dry SHA not newer than it on the dry branch, out of
// an environment. A newer dry SHA, a fix forward, is not held.
type Hold struct {
	// RevertCommit names the revert that holds, as namespace/name.
	RevertCommit string
	// DrySHA is the dry SHA it reverted.
	DrySHA string
}

// HasProposal reports whether the proposed branch differs from the environment branch.
func (e Environment) HasProposal() bool {
	return e.Proposed.HydratedSHA != "" && e.Proposed.HydratedSHA != e.Active.HydratedSHA
}

// Block is one reason a proposed change may not be merged.
type Block struct {
	Rule Rule
	// Environment is the environment the rule looks at: the later one for rule 1, the earlier
	// one for rules 2 and 3, else the environment the change is proposed to.
	Environment string
	Message     string
}

// Verdict is the outcome of Evaluate.
type Verdict struct {
	// Proposed is false when there is nothing to promote; Eligible is then false with no Blocks.
	Proposed bool
	// Eligible is true when the change may be merged now.
	Eligible bool
	// Blocks lists every rule that holds the change, in rule order.
	Blocks []Block
}

// Message joins the blocks in one line for status and Events.
func (v Verdict) Message() string {
	msgs := make([]string, len(v.Blocks))
	for i, b := range v.Blocks {
		msgs[i] = b.Message
	}
	return strings.Join(msgs, "; ")
}

// Rules returns the rules that block, e.g. for a metric label or an Event reason.
func (v Verdict) Rules() []Rule {
	rules := make([]Rule, len(v.Blocks))
	for i, b := range v.Blocks {
		rules[i] = b.Rule
	}
	return rules
}

// Evaluate applies the four rules, the gates and the rollback holds to the change proposed for
// environment i. envs is indexed like g.
func Evaluate(g *Graph, envs []Environment, i int, order DryOrder) Verdict {
	env := envs[i]
	if !env.HasProposal() {
		return Verdict{}
	}
	v := Verdict{Proposed: true}
	block := func(r Rule, envName, format string, args ...any) {
		v.Blocks = append(v.Blocks, Block{Rule: r, Environment: envName, Message: fmt.Sprintf(format, args...)})
	}
	dry := env.Proposed.DrySHA
	if dry == "" {
		block(RuleUnknownDrySHA, env.Branch, "%s: proposed commit %s names no dry commit (no hydrator note or hydrator.metadata file)", env.Branch, text.ShortSHA(env.Proposed.HydratedSHA))
	} else {
		noMovingBackwards(g, envs, i, order, block)
	}
	earlier := g.Before(i)
	for _, j := range earlier {
		e := envs[j]
		if e.Active.DrySHA != dry || dry == "" {
			block(RuleEarlierEnvironmentActive, e.Branch, "rule 2: %s is active on dry %s, not yet on %s", e.Branch, orNone(e.Active.DrySHA), orNone(dry))
		}
	}
	for _, j := range earlier {
		e := envs[j]
		for _, c := range e.ActiveChecks {
			if c.Phase != Success {
				block(RuleEarlierEnvironmentChecks, e.Branch, "rule 3: active check %s on %s is %s%s", c.Key, e.Branch, phaseOf(c.Phase), c.because())
			}
		}
	}
	for _, c := range env.ProposedChecks {
		if c.Phase != Success {
			block(RuleProposedChecks, env.Branch, "rule 4: proposed check %s on %s is %s%s", c.Key, env.Branch, phaseOf(c.Phase), c.because())
		}
	}
	if env.Gates != nil && !env.Gates.Allowed {
		block(RuleGates, env.Branch, "gates hold %s: %s", env.Branch, env.Gates.Message)
	}
	if dry != "" {
		heldAfterRollback(env, order, block)
	}
	v.Eligible = len(v.Blocks) == 0
	return v
}

type blockFunc func(r Rule, envName, format string, args ...any)

// noMovingBackwards is rule 1.
func noMovingBackwards(g *Graph, envs []Environment, i int, order DryOrder, block blockFunc) {
	dry := envs[i].Proposed.DrySHA
	for _, j := range g.After(i) {
		later := envs[j]
		if later.Active.DrySHA == "" {
			continue
		}
		o, err := order.Compare(dry, later.Active.DrySHA)
		switch {
		case err != nil:
			block(RuleNoMovingBackwards, later.Branch, "rule 1 (no moving backwards): cannot order dry %s against %s's active dry %s: %v", text.ShortSHA(dry), later.Branch, text.ShortSHA(later.Active.DrySHA), err)
		case o == Older:
			block(RuleNoMovingBackwards, later.Branch, "rule 1 (no moving backwards): dry %s is older than %s's active dry %s", text.ShortSHA(dry), later.Branch, text.ShortSHA(later.Active.DrySHA))
		case o == Unrelated:
			block(RuleNoMovingBackwards, later.Branch, "rule 1 (no moving backwards): dry %s does not come after %s's active dry %s on the dry branch", text.ShortSHA(dry), later.Branch, text.ShortSHA(later.Active.DrySHA))
		}
	}
}

// heldAfterRollback holds a proposed dry SHA that is not newer than a reverted one.
func heldAfterRollback(env Environment, order DryOrder, block blockFunc) {
	dry := env.Proposed.DrySHA
	for _, h := range env.Holds {
		o, err := order.Compare(dry, h.DrySHA)
		if err == nil && o == Newer {
			continue
		}
		how := "is the reverted one"
		switch {
		case err != nil:
			how = fmt.Sprintf("cannot be ordered against it: %v", err)
		case o == Older:
			how = "is older"
		case o == Unrelated:
			how = "does not come after it on the dry branch"
		}
		block(RuleHeldAfterRollback, env.Branch, "held after rollback: RevertCommit %s reverted dry %s in %s, and dry %s %s; push a fix forward, or lift the hold by deleting the RevertCommit or annotating it %s=<why>",
			h.RevertCommit, text.ShortSHA(h.DrySHA), env.Branch, text.ShortSHA(dry), how, rollbackv1alpha1.LiftHoldAnnotation)
	}
}

// Aggregate is the phase of a set of checks: failure if any fails, success if all pass (or
// there are none), pending otherwise.
func Aggregate(checks []Check) Phase {
	phase := Success
	for _, c := range checks {
		switch c.Phase {
		case Failure:
			return Failure
		case Success:
		default:
			phase = Pending
		}
	}
	return phase
}

// KeyPhase is the phase of one key from every CommitStatus of that key on the commit: failure if
// any fails, success if one passes, pending if none exists or all pend.
func KeyPhase(phases []Phase) Phase {
	out := Pending
	for _, p := range phases {
		switch p {
		case Failure:
			return Failure
		case Success:
			out = Success
		}
	}
	return out
}

func phaseOf(p Phase) string {
	if p == "" {
		return "missing"
	}
	return string(p)
}

func orNone(sha string) string {
	if sha == "" {
		return "(none)"
	}
	return text.ShortSHA(sha)
}
