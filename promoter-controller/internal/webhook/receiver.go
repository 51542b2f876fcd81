// Package webhook is the promoter's webhook receiver: it verifies SCM deliveries with the
// ScmProvider's webhook secret and enqueues at once the PromotionStrategies on the repository a
// push or pull-request event is about, long before their fallback poll.
package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/promoter-controller/internal/metrics"

	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/webhook"
)

// WebhookPath is where the receiver listens: POST /hooks/<namespace>/<scmprovider>. Configure
// the SCM's webhook with this URL and the ScmProvider secret's webhookSecret.
const WebhookPath = "/hooks/"

// Receiver receives SCM deliveries. It runs on every replica and acts only on the leader.
type Receiver struct {
	Kube       kubernetes.Interface
	Providers  scmlisters.ScmProviderLister
	Repos      scmlisters.ScmRepositoryLister
	Strategies promoterlisters.PromotionStrategyLister
	// Strategies receives the keys of the strategies a delivery is about.
	Queue   handler.Enqueuer
	Metrics *metrics.Metrics
	// Leading reports whether this replica runs the reconcilers; only then can a delivery be
	// acted on.
	Leading func() bool

	verifiersMu sync.Mutex
	verifiers   map[string]verifier
}

// Handler receives SCM deliveries, verifies them with the ScmProvider's webhook secret and
// enqueues at once the strategies on the repository the event is about.
func (p *Receiver) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		parts := strings.Split(strings.TrimPrefix(req.URL.Path, WebhookPath), "/")
		if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
			http.Error(w, "use /hooks/<namespace>/<scmprovider>", http.StatusNotFound)
			return
		}
		if !p.awaitLeadership(req.Context()) {
			p.Metrics.WebhookDelivery("unknown", "standby")
			w.Header().Set("Retry-After", "10")
			http.Error(w, "this replica is a standby: the leader acts on deliveries, and spec.interval catches up with missed ones", http.StatusServiceUnavailable)
			return
		}
		ns, name := parts[0], parts[1]
		provider, err := p.Providers.ScmProviders(ns).Get(name)
		if err != nil {
			p.Metrics.WebhookDelivery("unknown", "refused")
			http.Error(w, "no such ScmProvider", http.StatusNotFound)
			return
		}
		ptype := string(provider.Spec.Type)
		sp, status, msg := p.webhookVerifier(req.Context(), provider)
		if sp == nil {
			http.Error(w, msg, status)
			return
		}
		ev, err := scm.ReceiveWebhook(sp, req, 0)
		switch {
		case errors.Is(err, scm.ErrMalformedWebhook):
			p.Metrics.WebhookDelivery(ptype, "malformed")
			http.Error(w, "signed, but the payload cannot be read as a "+ptype+" event", http.StatusBadRequest)
			return
		case errors.Is(err, webhook.ErrTooLarge):
			p.Metrics.WebhookDelivery(ptype, "refused")
			http.Error(w, "delivery too large", http.StatusRequestEntityTooLarge)
			return
		case err != nil:
			p.forgetStaleVerifier(provider)
			p.Metrics.WebhookDelivery(ptype, "refused")
			http.Error(w, "delivery refused", http.StatusUnauthorized)
			return
		}
		if ev.Kind != scm.EventPush && ev.Kind != scm.EventPullRequest {
			p.Metrics.WebhookDelivery(ptype, "ignored")
			w.WriteHeader(http.StatusAccepted)
			return
		}
		p.Metrics.WebhookDelivery(ptype, "accepted")
		for _, key := range p.strategiesFor(ns, name, ev.Repository) {
			p.Queue.Enqueue(key)
		}
		w.WriteHeader(http.StatusAccepted)
	})
}

// verifierTTL is how long a provider's webhook secret is reused. Deliveries are unauthenticated
// until verified, so reading the Secret for each one would let anyone spend the controller's API
// budget; a rotated secret is in use within this time.
const verifierTTL = time.Minute

type verifier struct {
	provider        scm.Provider
	resourceVersion string
	read            time.Time
}

// webhookVerifier returns the provider client that checks deliveries for provider, reading its
// Secret at most once per verifierTTL and whenever the ScmProvider changes. On failure it returns
// the HTTP status and message to answer with; they never carry the Secret's content.
func (p *Receiver) webhookVerifier(ctx context.Context, provider *scmv1alpha1.ScmProvider) (scm.Provider, int, string) {
	key := provider.Namespace + "/" + provider.Name
	p.verifiersMu.Lock()
	cached, ok := p.verifiers[key]
	p.verifiersMu.Unlock()
	if ok && cached.resourceVersion == provider.ResourceVersion && time.Since(cached.read) < verifierTTL {
		return cached.provider, 0, ""
	}
	var secret map[string][]byte
	if provider.Spec.SecretRef != nil {
		s, err := p.Kube.CoreV1().Secrets(provider.Namespace).Get(ctx, provider.Spec.SecretRef.Name, metav1.GetOptions{})
		if err != nil {
			return nil, http.StatusServiceUnavailable, "cannot read the provider's secret"
		}
		secret = s.Data
	}
	cfg, err := scm.ConfigFor(provider, secret, nil)
	if err != nil {
		return nil, http.StatusServiceUnavailable, "provider misconfigured"
	}
	sp, err := scm.New(string(provider.Spec.Type), cfg)
	if err != nil {
		return nil, http.StatusServiceUnavailable, "provider misconfigured"
	}
	p.verifiersMu.Lock()
	if p.verifiers == nil {
		p.verifiers = map[string]verifier{}
	}
	p.verifiers[key] = verifier{provider: sp, resourceVersion: provider.ResourceVersion, read: time.Now()}
	p.verifiersMu.Unlock()
	return sp, 0, ""
}

// forgetStaleVerifier drops a verifier that refused a delivery and was read more than
// verifierRereadAfter ago, so a rotated webhook secret is picked up within seconds while a flood
// of bad deliveries still reads the Secret at most once per that interval.
func (p *Receiver) forgetStaleVerifier(provider *scmv1alpha1.ScmProvider) {
	key := provider.Namespace + "/" + provider.Name
	p.verifiersMu.Lock()
	defer p.verifiersMu.Unlock()
	if v, ok := p.verifiers[key]; ok && time.Since(v.read) > verifierRereadAfter {
		delete(p.verifiers, key)
	}
}

const verifierRereadAfter = 10 * time.Second

// leadershipWait is how long a delivery waits for this replica to lead. It covers a start or a
// handover, where the replica leads within seconds, while a standby in a long-lived pair still
// answers well before an SCM's delivery timeout (10 s on GitHub).
const leadershipWait = 5 * time.Second

func (p *Receiver) awaitLeadership(ctx context.Context) bool {
	if p.Leading() {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, leadershipWait)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
			if p.Leading() {
				return true
			}
		}
	}
}

// strategiesFor lists the strategies on repositories of provider that match the event's repository.
func (p *Receiver) strategiesFor(ns, provider string, repo scm.Repository) []string {
	repos, _ := p.Repos.ScmRepositories(ns).List(labels.Everything())
	match := map[string]bool{}
	for _, gr := range repos {
		if gr.Spec.ProviderRef.Name == provider && sameRepo(gr, repo) {
			match[gr.Name] = true
		}
	}
	list, _ := p.Strategies.PromotionStrategies(ns).List(labels.Everything())
	var keys []string
	for _, ps := range list {
		if match[ps.Spec.RepositoryRef.Name] {
			keys = append(keys, ps.Namespace+"/"+ps.Name)
		}
	}
	return keys
}

func sameRepo(gr *scmv1alpha1.ScmRepository, r scm.Repository) bool {
	want := scm.RepositoryFor(gr)
	return strings.EqualFold(want.Owner, r.Owner) && strings.EqualFold(want.Name, r.Name)
}

// Serve serves the receiver on ln until ctx ends.
func (p *Receiver) Serve(ctx context.Context, ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle(WebhookPath, p.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
