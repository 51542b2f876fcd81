package view

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
)

// FrozenGate is a closed gate and everything it holds now, as the "Frozen now" view lists it.
type FrozenGate struct {
	Namespace, Name string
	// Reason and Message are the gate-controller's words for why it is closed.
	Reason, Message string
	// Since is when it closed; Until when it opens again, if anything will open it.
	Since, Until *time.Time
	// Holding is the gate-controller's count; Held every held object the UI knows of.
	Holding int32
	Held    []Target
	// Promotions are the environments that name the gate, with why they wait, if they do.
	Promotions []GatedEnvironment
	// Approved names the revisions the gate lets through while closed.
	Approved string
}

// GatedEnvironment is an environment of a pipeline that names a gate.
type GatedEnvironment struct {
	Namespace, Name, Branch string
	Blocked                 string
}

// FrozenInput is what the view is built from: the gates, the targets that reference a gate,
// and the strategies.
type FrozenInput struct {
	Gates       []*gatingv1alpha1.Gate
	Referencing func(namespace, name string) []Target
	Strategies  []*promoterv1alpha1.PromotionStrategy
	Now         time.Time
}

// Frozen lists every closed gate, by namespace and name, with what it holds.
func Frozen(in FrozenInput) []FrozenGate {
	gated := gatedEnvironments(in.Strategies)
	var out []FrozenGate
	for _, g := range in.Gates {
		if !IsClosed(g) {
			continue
		}
		f := FrozenGate{Namespace: g.Namespace, Name: g.Name, Reason: g.Status.Reason, Message: g.Status.Message,
			Holding: g.Status.Holding, Approved: g.Status.Approved, Until: closedUntil(g, in.Now),
			Promotions: gated[g.Namespace+"/"+g.Name]}
		if t := g.Status.LastTransitionTime; t != nil {
			since := t.Time
			f.Since = &since
		}
		f.Held = heldBy(g, in.Referencing)
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b FrozenGate) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// IsClosed reports whether the gate-controller has found the gate closed: a gate it has not
// evaluated yet (no Open condition) is neither open nor closed to a reader.
func IsClosed(g *gatingv1alpha1.Gate) bool {
	c := meta.FindStatusCondition(g.Status.Conditions, gatingv1alpha1.ConditionOpen)
	return c != nil && c.Status == metav1.ConditionFalse
}

// closedUntil is when a closed gate opens: its closing override's expiry, else the next
// transition the gate-controller computed; nil when only a person will open it.
func closedUntil(g *gatingv1alpha1.Gate, now time.Time) *time.Time {
	if o := g.Spec.Override; o != nil && o.State == gatingv1alpha1.StateClosed && o.Until.After(now) && !g.Spec.Closed {
		until := o.Until.Time
		return &until
	}
	if t := g.Status.NextTransitionTime; t != nil {
		until := t.Time
		return &until
	}
	return nil
}

// heldBy merges the objects the gate's status lists with the referencing targets that are held,
// each once, sorted.
func heldBy(g *gatingv1alpha1.Gate, referencing func(namespace, name string) []Target) []Target {
	seen := map[Target]bool{}
	var out []Target
	if referencing != nil {
		for _, t := range referencing(g.Namespace, g.Name) {
			if t.Held {
				seen[Target{Kind: t.Kind, Namespace: t.Namespace, Name: t.Name}] = true
				out = append(out, t)
			}
		}
	}
	for _, h := range g.Status.Held {
		key := Target{Kind: h.Kind, Namespace: h.Namespace, Name: h.Name}
		if !seen[key] {
			seen[key] = true
			key.Held = true
			out = append(out, key)
		}
	}
	SortTargets(out)
	return out
}

// gatedEnvironments indexes the environments of every strategy by each gate they name, as
// "namespace/name".
func gatedEnvironments(strategies []*promoterv1alpha1.PromotionStrategy) map[string][]GatedEnvironment {
	out := map[string][]GatedEnvironment{}
	for _, s := range strategies {
		blocked := map[string]string{}
		for _, st := range s.Status.Environments {
			blocked[st.Branch] = st.Blocked
		}
		for _, e := range s.Spec.Environments {
			if e.Gates == nil {
				continue
			}
			for _, ref := range e.Gates.Refs {
				ns := cmp.Or(ref.Namespace, s.Namespace)
				key := ns + "/" + ref.Name
				out[key] = append(out[key], GatedEnvironment{Namespace: s.Namespace, Name: s.Name, Branch: e.Branch, Blocked: blocked[e.Branch]})
			}
		}
	}
	return out
}

// ClosedGates are the gates an environment of a strategy names that are closed now: what the
// pipelines list writes beside the environment.
func ClosedGates(s *promoterv1alpha1.PromotionStrategy, branch string, lookup func(namespace, name string) *gatingv1alpha1.Gate) []GateHold {
	for _, e := range s.Spec.Environments {
		if e.Branch != branch {
			continue
		}
		var out []GateHold
		for _, h := range gateHolds(e.Gates, s.Namespace, lookup) {
			if h.Missing || !h.Open {
				out = append(out, h)
			}
		}
		return out
	}
	return nil
}
