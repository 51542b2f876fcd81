package web

import (
	"net/http"
	"strings"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/ui/internal/view"
)

func asCommitStatus(o any) *commitstatusv1alpha1.CommitStatus {
	cs, _ := o.(*commitstatusv1alpha1.CommitStatus)
	return cs
}

func asRevertCommit(o any) *rollbackv1alpha1.RevertCommit {
	rc, _ := o.(*rollbackv1alpha1.RevertCommit)
	return rc
}

type gatesData struct {
	Missing *notInstalled
	Gates   []*gatingv1alpha1.Gate
	// One is set on a gate's own page.
	One  bool
	Done string
	// Targets are the Flux and Argo CD objects that reference the gate (on its own page), read
	// from their informers; TargetsMissing names the target kinds whose CRD is not installed.
	Targets        []view.Target
	TargetsMissing []string
	// Filter is the ?q= the list was filtered by, for its empty state.
	Filter string
}

func (s *Server) gates(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	data := gatesData{Done: s.flashes.get(r.URL.Query().Get("done"), s.Now())}
	if !s.Store.Gates.Installed() {
		data.Missing = &notInstalled{Kind: "Gate", Chart: "gate-controller"}
	}
	title := "Gates"
	if name != "" {
		g := s.Store.Gate(ns, name)
		if g == nil {
			s.notFound(w, r, "Gate", ns, name)
			return
		}
		data.Gates, data.One, title = []*gatingv1alpha1.Gate{g}, true, "Gate "+ns+"/"+name
		data.Targets, data.TargetsMissing = s.gateTargets(ns, name)
	} else {
		data.Filter = strings.TrimSpace(r.URL.Query().Get("q"))
		data.Gates = filter(s.Store.GateList(), data.Filter)
	}
	// The objects that reference a gate are watched by the gate they name (store.Referencing), not
	// by kind: a status write to another Flux object refreshes no gate's page.
	s.render(w, r, http.StatusOK, "gates", page{Title: title, Nav: "gates", Watch: "Gate", Data: data})
}

// gateTargets reads the objects that reference the gate namespace/name, and the target kinds
// that are not installed, as "Application (Argo CD)".
func (s *Server) gateTargets(namespace, name string) (targets []view.Target, missing []string) {
	for _, r := range s.Store.Referencing(namespace, name) {
		targets = append(targets, view.GateTarget(r.Kind, r.Object))
	}
	view.SortTargets(targets)
	for _, t := range s.Store.MissingTargets() {
		missing = append(missing, t.Kind+" ("+t.Project+")")
	}
	return targets, missing
}

type healthData struct {
	Missing *notInstalled
	Checks  []*healthv1alpha1.HealthCheck
	Filter  string
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	data := healthData{Checks: filter(s.Store.HealthCheckList(), q), Filter: q}
	if !s.Store.HealthChecks.Installed() {
		data.Missing = &notInstalled{Kind: "HealthCheck", Chart: "health-controller"}
	}
	s.render(w, r, http.StatusOK, "health", page{Title: "Health", Nav: "health", Watch: "HealthCheck", Data: data})
}

type rollbacksData struct {
	Missing  *notInstalled
	Reverts  []*rollbackv1alpha1.RevertCommit
	Policies []*rollbackv1alpha1.RollbackPolicy
	Releases []*rollbackv1alpha1.ManifestRelease
	Done     string
}

func (s *Server) rollbacks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	data := rollbacksData{Reverts: filter(s.Store.RevertCommitList(), q), Policies: filter(s.Store.RollbackPolicyList(), q),
		Releases: filter(s.Store.ManifestReleaseList(), q), Done: s.flashes.get(r.URL.Query().Get("done"), s.Now())}
	if !s.Store.RevertCommits.Installed() {
		data.Missing = &notInstalled{Kind: "RevertCommit, RollbackPolicy and ManifestRelease", Chart: "rollback-controller"}
	}
	s.render(w, r, http.StatusOK, "rollbacks", page{Title: "Rollbacks", Nav: "rollbacks",
		Watch: "RevertCommit,RollbackPolicy,ManifestRelease", Data: data})
}

type searchData struct {
	Pipelines []view.Summary
	Gates     []*gatingv1alpha1.Gate
	Checks    []*healthv1alpha1.HealthCheck
	Reverts   []*rollbackv1alpha1.RevertCommit
	Releases  []*rollbackv1alpha1.ManifestRelease
}

// search finds every object whose namespace/name holds each word of the query, and every
// pipeline that runs or proposes a SHA starting with it.
func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	var data searchData
	if q != "" {
		for _, ps := range s.Store.StrategyList() {
			if view.Matches(ps, q) {
				data.Pipelines = append(data.Pipelines, view.Summarize(ps))
			}
		}
		data.Gates = filter(s.Store.GateList(), q)
		data.Checks = filter(s.Store.HealthCheckList(), q)
		data.Reverts = filter(s.Store.RevertCommitList(), q)
		data.Releases = filter(s.Store.ManifestReleaseList(), q)
	}
	s.render(w, r, http.StatusOK, "search", page{Title: "Search", Query: q, Data: data})
}

// filter keeps the objects whose namespace/name contains every word of query.
func filter[T interface {
	GetNamespace() string
	GetName() string
}](objs []T, query string) []T {
	words := strings.Fields(strings.ToLower(query))
	if len(words) == 0 {
		return objs
	}
	var out []T
	for _, o := range objs {
		key := strings.ToLower(o.GetNamespace() + "/" + o.GetName())
		all := true
		for _, w := range words {
			all = all && strings.Contains(key, w)
		}
		if all {
			out = append(out, o)
		}
	}
	return out
}
