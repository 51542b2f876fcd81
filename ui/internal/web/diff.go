package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"k8s.io/client-go/kubernetes"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/ui/internal/gitdiff"
)

// diffData is what the diff page shows: a change, or why it cannot be shown.
type diffData struct {
	Heading string
	// From and To name the two sides.
	From, To string
	Back     string
	// Error is why there is no diff; Status its HTTP status.
	Error  string
	Result gitdiff.Result
}

// DiffLimits bound every diff the UI shows (gitdiff.Limits; zero fields are the defaults).
var DiffLimits = gitdiff.Limits{}

// pipelineDiff shows the per-file diff of an environment's hydrated branch between two commits,
// read as the person who asks (personSource).
func (s *Server) pipelineDiff(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	ps := s.Store.PromotionStrategy(ns, name)
	if ps == nil {
		s.notFound(w, r, "PromotionStrategy", ns, name)
		return
	}
	q := r.URL.Query()
	branch, from, to := q.Get("env"), q.Get("from"), q.Get("to")
	data := diffData{Heading: "Hydrated manifests of " + branch + " in " + ns + "/" + name, From: from, To: to,
		Back: pathOf("pipelines", ns, name)}
	if data.From == "" {
		data.From = "its parent"
	}
	status := http.StatusOK
	if err := s.readDiff(r, ps, branch, from, to, &data.Result); err != nil {
		status, data.Error = diffError(err)
	}
	s.render(w, r, status, "diff", page{Title: "Diff of " + ns + "/" + name + " " + branch, Nav: "pipelines", Data: data})
}

func (s *Server) readDiff(r *http.Request, ps *promoterv1alpha1.PromotionStrategy, branch, from, to string, out *gitdiff.Result) error {
	if !slices.ContainsFunc(ps.Spec.Environments, func(e promoterv1alpha1.Environment) bool { return e.Branch == branch }) {
		return &readRefusal{http.StatusNotFound, fmt.Sprintf("PromotionStrategy %s/%s has no environment %q", ps.Namespace, ps.Name, branch)}
	}
	kube, err := s.personKube(r)
	if err != nil {
		return err
	}
	repo := s.Store.ScmRepository(ps.Namespace, ps.Spec.RepositoryRef.Name)
	if repo == nil {
		return &readRefusal{http.StatusNotFound, fmt.Sprintf("ScmRepository %s/%s, the repository of the strategy, does not exist", ps.Namespace, ps.Spec.RepositoryRef.Name)}
	}
	lim := DiffLimits.WithDefaults()
	ctx, cancel := context.WithTimeout(r.Context(), lim.Timeout)
	defer cancel()
	release, err := takeDiffSlot(ctx)
	if err != nil {
		return err
	}
	defer release()
	src, err := personSource(ctx, kube, repo, s.Store.ScmProvider(ps.Namespace, repo.Spec.ProviderRef.Name))
	if err != nil {
		return err
	}
	suffix := ps.Spec.ProposedBranchSuffix
	if suffix == "" {
		suffix = promoterv1alpha1.DefaultProposedBranchSuffix
	}
	gr, err := gitdiff.Fetch(ctx, src, []string{branch, branch + suffix}, lim)
	if err != nil {
		return timedOut(ctx, err, lim)
	}
	res, err := gr.Diff(ctx, from, to, lim)
	if err != nil {
		return timedOut(ctx, err, lim)
	}
	*out = res
	return nil
}

// personKube is the person's client, or a readRefusal for a request that names nobody: the UI reads
// nothing for a diff with its own rights.
func (s *Server) personKube(r *http.Request) (kubernetes.Interface, error) {
	id, ok := s.Identify.Identify(r)
	if !ok || s.Act == nil {
		return nil, &readRefusal{http.StatusUnauthorized, "Sign in to see a diff: the UI reads the repository and snapshots only as the person who asks, and this request names nobody."}
	}
	return s.Act.kubeFor(id)
}

// timedOut names a deadline that ended the read.
func timedOut(ctx context.Context, err error, lim gitdiff.Limits) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &readRefusal{http.StatusGatewayTimeout, fmt.Sprintf("Timed out: the diff took longer than %s, the most the UI waits. Compare the commits on the SCM or with git.", lim.Timeout)}
	}
	return err
}

// diffError is the status and message of a failed diff.
func diffError(err error) (int, string) {
	var ref *readRefusal
	switch {
	case errors.As(err, &ref):
		return ref.Status, ref.Message
	case errors.Is(err, gitdiff.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, "Diff too large: " + err.Error()
	case errors.Is(err, gitdiff.ErrUnknownCommit):
		return http.StatusNotFound, err.Error() + " (the environment's branch and its proposed branch)"
	}
	return http.StatusBadGateway, "Cannot read the repository: " + err.Error()
}
