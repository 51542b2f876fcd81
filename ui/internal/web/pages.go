package web

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/ui/internal/view"
)

type pipelinesData struct {
	Missing   *notInstalled
	Pipelines []view.Summary
	// Matched of Total strategies answer the filter; the page shows From to To of them.
	Matched, Total, From, To int
	Prev, Next               string
	Done                     string
}

// pageSize bounds a list page: a thousand strategies render in one page slower than a person
// reads one, and the filter and search find any of them.
const pageSize = 100

func (s *Server) pipelines(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	data := pipelinesData{Done: s.flashes.get(r.URL.Query().Get("done"), s.Now())}
	if !s.Store.Strategies.Installed() {
		data.Missing = &notInstalled{Kind: "PromotionStrategy", Chart: "promoter-controller"}
	}
	offset, _ := strconv.Atoi(r.URL.Query().Get("from"))
	offset = max(0, offset)
	for _, ps := range s.Store.StrategyList() {
		data.Total++
		if q != "" && !view.Matches(ps, q) {
			continue
		}
		if data.Matched >= offset && data.Matched < offset+pageSize {
			data.Pipelines = append(data.Pipelines, view.WithClosedGates(view.Summarize(ps), ps, s.Store.Gate))
		}
		data.Matched++
	}
	data.From, data.To = min(offset+1, data.Matched), min(offset+pageSize, data.Matched)
	if offset > 0 {
		data.Prev = listURL(q, max(0, offset-pageSize))
	}
	if offset+pageSize < data.Matched {
		data.Next = listURL(q, offset+pageSize)
	}
	s.render(w, r, http.StatusOK, "pipelines", page{Title: "Pipelines", Nav: "pipelines", Query: q, Watch: "PromotionStrategy,Gate", Data: data})
}

func listURL(q string, from int) string {
	v := url.Values{}
	if q != "" {
		v.Set("q", q)
	}
	if from > 0 {
		v.Set("from", strconv.Itoa(from))
	}
	if len(v) == 0 {
		return "/pipelines"
	}
	return "/pipelines?" + v.Encode()
}

type pipelineData struct {
	Pipeline view.Pipeline
	Done     string
}

func (s *Server) pipeline(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	ps := s.Store.PromotionStrategy(ns, name)
	if ps == nil {
		s.notFound(w, r, "PromotionStrategy", ns, name)
		return
	}
	in := view.PipelineInput{Links: s.links(ps), Gate: s.Store.Gate, Agents: s.environmentAgents(ps)}
	for _, o := range s.Store.CommitStatuses.InNamespace(ns) {
		in.CommitStatuses = append(in.CommitStatuses, asCommitStatus(o))
	}
	for _, o := range s.Store.RevertCommits.InNamespace(ns) {
		in.RevertCommits = append(in.RevertCommits, asRevertCommit(o))
	}
	data := pipelineData{Pipeline: view.BuildPipeline(ps, in), Done: s.flashes.get(r.URL.Query().Get("done"), s.Now())}
	s.render(w, r, http.StatusOK, "pipeline", page{Title: ns + "/" + name, Nav: "pipelines",
		Watch: "PromotionStrategy,CommitStatus,Gate,RevertCommit,PullRequest", Data: data})
}

// links finds the SCM pages of a strategy's repository.
func (s *Server) links(ps *promoterv1alpha1.PromotionStrategy) view.Links {
	repo := s.Store.ScmRepository(ps.Namespace, ps.Spec.RepositoryRef.Name)
	if repo == nil {
		return view.Links{}
	}
	var typ scmv1alpha1.ScmProviderType
	if p := s.Store.ScmProvider(ps.Namespace, repo.Spec.ProviderRef.Name); p != nil {
		typ = p.Spec.Type
	}
	return view.LinksFor(repo, typ)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request, kind, ns, name string) {
	s.render(w, r, http.StatusNotFound, "notfound", page{Title: "Not found", Watch: kind,
		Data: map[string]string{"Kind": kind, "Namespace": ns, "Name": name}})
}
