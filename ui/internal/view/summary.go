package view

import (
	"strings"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
)

// Summary is one line of the pipeline list: each environment's active dry commit and whether
// something waits. It reads only the strategy, so a list of thousands stays cheap.
type Summary struct {
	Namespace, Name string
	Suspended       string
	Problem         string
	Environments    []EnvironmentSummary
}

// EnvironmentSummary is one environment in the pipeline list.
type EnvironmentSummary struct {
	Branch, ActiveDrySHA, Phase string
	// Promoting is set while a newer dry commit is proposed.
	Promoting bool
	Blocked   string
	// Closed are the gates the environment names that are closed (or missing) now; set by
	// WithClosedGates, which reads the gates.
	Closed []GateHold
}

// WithClosedGates adds to a strategy's line the closed gates each environment names.
func WithClosedGates(sum Summary, s *promoterv1alpha1.PromotionStrategy, lookup func(namespace, name string) *gatingv1alpha1.Gate) Summary {
	for i := range sum.Environments {
		sum.Environments[i].Closed = ClosedGates(s, sum.Environments[i].Branch, lookup)
	}
	return sum
}

// Summarize builds a strategy's line of the list, environments in DAG order.
func Summarize(s *promoterv1alpha1.PromotionStrategy) Summary {
	out := Summary{Namespace: s.Namespace, Name: s.Name, Suspended: suspendedReason(s, s.Spec.Suspend), Problem: problem(s.Status.Conditions)}
	statuses := map[string]promoterv1alpha1.EnvironmentStatus{}
	for _, st := range s.Status.Environments {
		statuses[st.Branch] = st
	}
	for _, i := range dagOrder(s.Spec.Environments) {
		st := statuses[s.Spec.Environments[i].Branch]
		out.Environments = append(out.Environments, EnvironmentSummary{
			Branch: s.Spec.Environments[i].Branch, ActiveDrySHA: st.Active.DrySHA, Phase: string(st.Active.Phase),
			Promoting: st.Proposed.DrySHA != "" && st.Proposed.DrySHA != st.Active.DrySHA, Blocked: st.Blocked,
		})
	}
	return out
}

// Matches reports whether a strategy answers the search query: a word of its namespace, name,
// an environment's branch, or the start of a dry or hydrated SHA it runs or proposes. Every word
// of the query must match.
func Matches(s *promoterv1alpha1.PromotionStrategy, query string) bool {
	for _, word := range strings.Fields(strings.ToLower(query)) {
		if !matchesWord(s, word) {
			return false
		}
	}
	return true
}

func matchesWord(s *promoterv1alpha1.PromotionStrategy, word string) bool {
	if strings.Contains(strings.ToLower(s.Namespace+"/"+s.Name), word) {
		return true
	}
	for _, e := range s.Spec.Environments {
		if strings.Contains(strings.ToLower(e.Branch), word) {
			return true
		}
	}
	for _, st := range s.Status.Environments {
		for _, sha := range []string{st.Active.DrySHA, st.Active.HydratedSHA, st.Proposed.DrySHA, st.Proposed.HydratedSHA} {
			if len(word) >= 4 && strings.HasPrefix(sha, word) {
				return true
			}
		}
	}
	return false
}
