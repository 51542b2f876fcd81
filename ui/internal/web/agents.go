package web

import (
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/ui/internal/view"
)

// environmentAgents finds, for each environment branch of ps, the Flux Kustomizations and Argo
// CD Applications that deploy it from the strategy's repository (store.AgentsOf). The page
// watches them by branch, not by kind: a status write to another agent refreshes no pipeline.
func (s *Server) environmentAgents(ps *promoterv1alpha1.PromotionStrategy) func(branch string) []view.Agent {
	repo := s.Store.ScmRepository(ps.Namespace, ps.Spec.RepositoryRef.Name)
	if repo == nil {
		return nil
	}
	return func(branch string) []view.Agent {
		var out []view.Agent
		for _, o := range s.Store.AgentsOf(repo.Spec.URL, branch) {
			out = append(out, view.AgentOf(o.Kind, o.Object))
		}
		view.SortAgents(out)
		return out
	}
}
