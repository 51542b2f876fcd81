package web

import (
	"net/http"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"

	"github.com/sluicehq/sluice/ui/internal/view"
)

type historyData struct {
	History view.History
	// RevertsMissing is set when the rollback-controller's CRDs are not installed: the history
	// then shows promotions only.
	RevertsMissing *notInstalled
	// Kept is how many promotions of an environment the promoter keeps in its status.
	Kept int
}

// history shows a strategy's dry commits × environments and each environment's DORA figures.
func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	ps := s.Store.PromotionStrategy(ns, name)
	if ps == nil {
		s.notFound(w, r, "PromotionStrategy", ns, name)
		return
	}
	data := historyData{Kept: promoterv1alpha1.MaxHistory}
	if !s.Store.RevertCommits.Installed() {
		data.RevertsMissing = &notInstalled{Kind: "RevertCommit", Chart: "rollback-controller"}
	}
	var reverts []*rollbackv1alpha1.RevertCommit
	for _, o := range s.Store.RevertCommits.InNamespace(ns) {
		if rc := asRevertCommit(o); rc != nil {
			reverts = append(reverts, rc)
		}
	}
	data.History = view.BuildHistory(ps, s.links(ps), reverts, s.Now())
	s.render(w, r, http.StatusOK, "history", page{Title: "History of " + ns + "/" + name, Nav: "pipelines",
		Watch: "PromotionStrategy,RevertCommit", Data: data})
}
