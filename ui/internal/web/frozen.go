package web

import (
	"net/http"
	"strconv"

	"github.com/sluicehq/sluice/ui/internal/view"
)

type frozenData struct {
	Missing *notInstalled
	Gates   []view.FrozenGate
}

// frozen is the "Frozen now" view: every closed gate, every object it holds and every
// environment that names it, with the reason, since when and until when.
func (s *Server) frozen(w http.ResponseWriter, r *http.Request) {
	data := frozenData{Gates: view.Frozen(view.FrozenInput{Gates: s.Store.GateList(), Referencing: s.referencingTargets,
		Strategies: s.Store.StrategyList(), Now: s.Now()})}
	if !s.Store.Gates.Installed() {
		data.Missing = &notInstalled{Kind: "Gate", Chart: "gate-controller"}
	}
	// Held objects are watched by the gates they name (store.Referencing), not by kind.
	s.render(w, r, http.StatusOK, "frozen", page{Title: "Frozen now", Nav: "frozen", Watch: "Gate,PromotionStrategy", Data: data})
}

// referencingTargets are the targets that reference the gate namespace/name.
func (s *Server) referencingTargets(namespace, name string) []view.Target {
	var out []view.Target
	for _, r := range s.Store.Referencing(namespace, name) {
		out = append(out, view.GateTarget(r.Kind, r.Object))
	}
	return out
}

// closedGates counts the closed gates, for the header.
func (s *Server) closedGates() int {
	n := 0
	for _, g := range s.Store.GateList() {
		if view.IsClosed(g) {
			n++
		}
	}
	return n
}

// closedGatesLabel is the header link's text.
func closedGatesLabel(n int) string {
	if n == 1 {
		return "1 closed gate"
	}
	return strconv.Itoa(n) + " closed gates"
}

// frozenCount answers the header's live update: the link's text, which a page fetches when
// gates change, whatever kinds the page itself shows.
func (s *Server) frozenCount(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(closedGatesLabel(s.closedGates())))
}
