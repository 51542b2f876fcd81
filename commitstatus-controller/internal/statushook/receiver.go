// Package statushook receives the SCM's status webhooks (GitHub status, check_run and
// check_suite; Gitea and Forgejo status; GitLab pipeline and job hooks) and has the import of
// the PromotionStrategies tracking that commit run at once, instead of at their next poll.
//
// It is the commitstatus-controller's own receiver, beside the promoter's (which wakes strategies
// on pushes and pull requests): the import runs here, so the delivery lands where the work is,
// and the SCM's hook for status events is a second hook on the repository with only those events
// selected. A delivery only says "look again": the statuses are read from the SCM's API, with the
// import's credentials, so a forged payload cannot make a check pass.
package statushook

import (
	"context"
	"net"
	"net/http"

	"k8s.io/apimachinery/pkg/labels"

	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/scmimport"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/runtime/httpserve"
	"github.com/sluicehq/sluice/pkg/scm"
)

// Path is where the receiver listens: POST /hooks/<namespace>/<scmprovider>.
const Path = scm.WebhookPath

// Verifier returns the provider client that checks deliveries for an ScmProvider.
type Verifier func(ctx context.Context, p *scmv1alpha1.ScmProvider) (scm.Provider, error)

// Receiver receives status deliveries.
type Receiver struct {
	Providers  scmlisters.ScmProviderLister
	Repos      scmlisters.ScmRepositoryLister
	Strategies promoterlisters.PromotionStrategyLister
	Verify     Verifier
	// Queue is the import's queue, keyed by strategy.
	Queue handler.Enqueuer
	// Leading reports whether this replica runs the import.
	Leading func() bool
	// Ready reports whether the listers are filled.
	Ready func() bool
}

// Handler verifies a delivery and enqueues the strategies that track its commit.
func (r *Receiver) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ns, name, ok := scm.WebhookTarget(w, req)
		if !ok {
			return
		}
		if (r.Ready != nil && !r.Ready()) || !r.Leading() {
			// The import runs on the leader only; the SCM shows the failed delivery, which can be
			// redelivered, and the poll catches up meanwhile.
			w.Header().Set("Retry-After", "10")
			http.Error(w, "this replica does not run the import now; the poll catches up", http.StatusServiceUnavailable)
			return
		}
		provider, err := r.Providers.ScmProviders(ns).Get(name)
		if err != nil {
			http.Error(w, "no such ScmProvider", http.StatusNotFound)
			return
		}
		sp, err := r.Verify(req.Context(), provider)
		if err != nil {
			http.Error(w, "provider not usable", http.StatusServiceUnavailable)
			return
		}
		ev, refusal := scm.VerifyDelivery(w, req, sp)
		if refusal != scm.Accepted {
			return
		}
		if ev.Kind == scm.EventCommitStatus {
			for _, key := range r.strategiesFor(provider, ev) {
				r.Queue.Enqueue(key)
			}
		}
		w.WriteHeader(http.StatusAccepted)
	})
}

// strategiesFor lists the strategies on the event's repository, through provider, that track
// the event's commit.
func (r *Receiver) strategiesFor(provider *scmv1alpha1.ScmProvider, ev *scm.Event) []string {
	repos, _ := r.Repos.ScmRepositories(provider.Namespace).List(labels.Everything())
	match := map[string]bool{}
	for _, gr := range repos {
		if scm.DeliveredFor(gr, provider.Name, ev.Repository) {
			match[gr.Name] = true
		}
	}
	list, _ := r.Strategies.PromotionStrategies(provider.Namespace).List(labels.Everything())
	var keys []string
	for _, ps := range list {
		if !match[ps.Spec.RepositoryRef.Name] {
			continue
		}
		for _, sha := range scmimport.TrackedSHAs(ps) {
			if sha == ev.CommitStatus.SHA {
				keys = append(keys, ps.Namespace+"/"+ps.Name)
				break
			}
		}
	}
	return keys
}

// Serve serves the receiver on ln until ctx ends.
func (r *Receiver) Serve(ctx context.Context, ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle(Path, r.Handler())
	return httpserve.Serve(ctx, ln, mux)
}
