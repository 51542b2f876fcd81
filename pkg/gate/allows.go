package gate

import (
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/pkg/text"
)

// Verdict says whether the referenced gates let a target proceed, and why not.
type Verdict struct {
	Allowed bool
	// Message names each gate that is not open and why, in words fit for an annotation or Event.
	Message string
	// Missing lists the referenced gates that do not exist, even when Allowed under oneOf.
	Missing []Ref
	// Denying lists the existing gates that are not open (or could not be read), even when Allowed under oneOf.
	Denying []Ref
}

// Allows decides whether refs let a target proceed under require (empty means RequireAll), from
// the status the gate-controller wrote: a gate counts as open only when its status is current
// (status.observedGeneration equals metadata.generation), status.open is true and its Open
// condition is True. It fails closed: a missing gate, an unreadable gate or a gate not yet
// evaluated denies. lookup returns the gate or an error; a NotFound error or a nil gate means missing.
func Allows(refs []Ref, require Require, lookup func(namespace, name string) (*gatingv1alpha1.Gate, error)) Verdict {
	return AllowsFor(Subject{}, refs, require, lookup)
}

// Subject is what is asking to pass the gates: the revision it would bring, and the time.
type Subject struct {
	// Revision is the target's source revision or the promotion's dry SHA; empty when unknown.
	Revision string
	// Unknown says why the revision is not known, for the message of a gate that approves revisions.
	Unknown string
	// Now decides whether an approval has expired.
	Now time.Time
}

// AllowsFor is Allows for a subject: a closed gate lets it through when the gate's status lists
// an approval of its revision that has not expired at s.Now (see RevisionsMatch).
func AllowsFor(s Subject, refs []Ref, require Require, lookup func(namespace, name string) (*gatingv1alpha1.Gate, error)) Verdict {
	if require == "" {
		require = RequireAll
	}
	if require != RequireAll && require != RequireOneOf {
		return Verdict{Message: fmt.Sprintf("unknown requirement %q; use %q or %q", require, RequireAll, RequireOneOf)}
	}
	if len(refs) == 0 {
		return Verdict{Allowed: true, Message: "no gates referenced"}
	}
	var v Verdict
	var open []Ref
	var problems, approvals []string
	// Only the first problems are described: with thousands of gates on one target the message
	// would otherwise grow without bound.
	describe := func(format string, args ...any) {
		if len(problems) < maxListed {
			problems = append(problems, text.TruncateBytes(fmt.Sprintf(format, args...), MaxGateMessage))
		} else {
			problems = append(problems, "")
		}
	}
	for _, ref := range refs {
		g, err := lookup(ref.Namespace, ref.Name)
		switch {
		case apierrors.IsNotFound(err) || (err == nil && g == nil):
			v.Missing = append(v.Missing, ref)
			describe("gate %s does not exist", ref)
		case err != nil:
			v.Denying = append(v.Denying, ref)
			describe("gate %s could not be read: %v", ref, err)
		default:
			if ok, why := isOpen(g); ok {
				open = append(open, ref)
			} else if a, approved := approvalFor(g, s); approved {
				open = append(open, ref)
				approvals = append(approvals, fmt.Sprintf("gate %s %s", ref, describeApproval(a)))
			} else {
				why += notApproved(g, s)
				v.Denying = append(v.Denying, ref)
				describe("gate %s %s", ref, why)
			}
		}
	}
	switch {
	case require == RequireAll && len(problems) == 0:
		v.Allowed = true
		v.Message = "open: " + joinRefs(open)
	case require == RequireAll:
		v.Message = "held: " + listSome(problems, maxListed)
	case len(open) > 0:
		v.Allowed = true
		v.Message = "open (oneOf): " + joinRefs(open)
	default:
		v.Message = "held: no gate is open (oneOf): " + listSome(problems, maxListed)
	}
	if v.Allowed && len(approvals) > 0 {
		v.Message += "; " + listSome(approvals, maxListed)
	}
	v.Message = text.TruncateBytes(v.Message, MaxReason)
	return v
}

// approvalFor is the approval by which a closed gate g lets s through. Only a gate the
// gate-controller has evaluated approves: its status must be current, as for an open gate.
func approvalFor(g *gatingv1alpha1.Gate, s Subject) (gatingv1alpha1.GateApproval, bool) {
	if s.Revision == "" || g.Status.ObservedGeneration != g.Generation {
		return gatingv1alpha1.GateApproval{}, false
	}
	return approvalOf(g, s.Revision, s.Now)
}

// notApproved says, for a closed gate that approves revisions, why it does not approve s.
func notApproved(g *gatingv1alpha1.Gate, s Subject) string {
	if len(g.Status.Approvals) == 0 || g.Status.ObservedGeneration != g.Generation {
		return ""
	}
	approved := SummarizeApprovals(g.Status.Approvals)
	switch {
	case s.Revision != "":
		return fmt.Sprintf("; it approves %s, not %s", approved, shortRevision(s.Revision))
	case s.Unknown != "":
		return fmt.Sprintf("; it approves %s, and the revision here is not known: %s", approved, s.Unknown)
	default:
		return fmt.Sprintf("; it approves %s only", approved)
	}
}

// Bounds of the words copied from one object into another, so a long suspend reason or message
// never makes a status or a target's annotations too large to write.
const (
	// MaxGateMessage bounds what a verdict says about one gate.
	MaxGateMessage = 512
	// MaxReason bounds a verdict's message, which becomes a held target's suspend reason.
	MaxReason = 1024
)

func isOpen(g *gatingv1alpha1.Gate) (bool, string) {
	st := g.Status
	if st.ObservedGeneration != g.Generation {
		return false, fmt.Sprintf("has not been evaluated yet (generation %d, observed %d)", g.Generation, st.ObservedGeneration)
	}
	cond := meta.FindStatusCondition(st.Conditions, gatingv1alpha1.ConditionOpen)
	if cond == nil {
		return false, "has not been evaluated yet (no Open condition)"
	}
	reason, message := orDefault(st.Reason, cond.Reason), orDefault(st.Message, cond.Message)
	switch {
	case st.Open && cond.Status == metav1.ConditionTrue:
		return true, ""
	case st.Open != (cond.Status == metav1.ConditionTrue):
		return false, fmt.Sprintf("has a contradictory status (open %t, Open condition %s)", st.Open, cond.Status)
	case message != "":
		return false, fmt.Sprintf("is closed (%s: %s)", reason, message)
	case reason != "":
		return false, fmt.Sprintf("is closed (%s)", reason)
	default:
		return false, "is closed"
	}
}

func joinRefs(refs []Ref) string {
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.String()
	}
	return listSome(names, maxListed)
}
