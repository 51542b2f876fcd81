// Package webhook is the promoter's webhook receiver: it verifies SCM deliveries with the
// ScmProvider's webhook secret and has the PromotionStrategies on the repository a push or
// pull-request event is about reconciled at once, long before their fallback poll, whichever
// replica the delivery reaches.
package webhook

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/runtime/httpserve"
	"github.com/sluicehq/sluice/promoter-controller/internal/metrics"

	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/scm"
)

// WebhookPath is where the receiver listens: POST /hooks/<namespace>/<scmprovider>. Configure
// the SCM's webhook with this URL and the ScmProvider secret's webhookSecret.
const WebhookPath = scm.WebhookPath

// Receiver receives SCM deliveries on every replica. The leader enqueues the strategies a
// delivery is about; another replica passes it on through the API server (forward.go).
type Receiver struct {
	Kube kubernetes.Interface
	// Client sets the refresh annotation of strategies when this replica does not lead.
	Client     sluice.Interface
	Providers  scmlisters.ScmProviderLister
	Repos      scmlisters.ScmRepositoryLister
	Strategies promoterlisters.PromotionStrategyLister
	// Queue receives the keys of the strategies a delivery is about, on the leader.
	Queue   handler.Enqueuer
	Metrics *metrics.Metrics
	// Leading reports whether this replica runs the reconcilers.
	Leading func() bool
	// Ready reports whether the listers are filled; until then a delivery is answered 503, as
	// an unknown ScmProvider would wrongly be 404. Nil means always.
	Ready func() bool
	// Log, when set, records what cannot be passed on to the leader.
	Log *slog.Logger

	verifiersMu sync.Mutex
	verifiers   map[string]verifier
	forwards    forwarder
}

// Handler receives SCM deliveries, verifies them with the ScmProvider's webhook secret and has
// the strategies on the repository the event is about reconciled at once.
func (p *Receiver) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ns, name, ok := scm.WebhookTarget(w, req)
		if !ok {
			return
		}
		if p.Ready != nil && !p.Ready() {
			p.Metrics.WebhookDelivery("unknown", "unready")
			w.Header().Set("Retry-After", "5")
			http.Error(w, "this replica is starting and has not read the cluster yet", http.StatusServiceUnavailable)
			return
		}
		provider, err := p.Providers.ScmProviders(ns).Get(name)
		if err != nil {
			p.Metrics.WebhookDelivery("unknown", "refused")
			http.Error(w, "no such ScmProvider", http.StatusNotFound)
			return
		}
		ev, ok := p.receive(w, req, provider)
		if !ok {
			return
		}
		p.act(req.Context(), w, string(provider.Spec.Type), p.strategiesFor(ns, name, ev.Repository))
	})
}

// receive verifies a delivery and reads its event. When the delivery is not to be acted on, it
// answers and counts it, and returns false.
func (p *Receiver) receive(w http.ResponseWriter, req *http.Request, provider *scmv1alpha1.ScmProvider) (*scm.Event, bool) {
	ptype := string(provider.Spec.Type)
	sp, status, msg := p.webhookVerifier(req.Context(), provider)
	if sp == nil {
		http.Error(w, msg, status)
		return nil, false
	}
	ev, refusal := scm.VerifyDelivery(w, req, sp)
	if refusal == scm.RefusedUnverified {
		p.forgetStaleVerifier(provider)
	}
	if refusal != scm.Accepted {
		// A signed delivery the SCM sent wrong is the sender's fault; the rest are refused.
		outcome := "refused"
		if refusal == scm.RefusedMalformed {
			outcome = "malformed"
		}
		p.Metrics.WebhookDelivery(ptype, outcome)
		return nil, false
	}
	if ev.Kind != scm.EventPush && ev.Kind != scm.EventPullRequest {
		p.Metrics.WebhookDelivery(ptype, "ignored")
		w.WriteHeader(http.StatusAccepted)
		return ev, false
	}
	return ev, true
}

// act has the strategies keys reconciled: the leader enqueues them before answering; another
// replica answers once their refresh annotations are set, or 503 if they cannot be.
func (p *Receiver) act(ctx context.Context, w http.ResponseWriter, ptype string, keys []string) {
	if p.Leading() {
		p.Metrics.WebhookDelivery(ptype, "accepted")
		for _, key := range keys {
			p.Queue.Enqueue(key)
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if err := p.forward(ctx, keys); err != nil {
		p.Metrics.WebhookDelivery(ptype, "unforwarded")
		w.Header().Set("Retry-After", "10")
		http.Error(w, "this replica does not lead and could not pass the delivery on to the leader; redeliver it, or spec.interval catches up", http.StatusServiceUnavailable)
		return
	}
	p.Metrics.WebhookDelivery(ptype, "forwarded")
	w.WriteHeader(http.StatusAccepted)
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

// strategiesFor lists the strategies on repositories of provider that match the event's repository.
func (p *Receiver) strategiesFor(ns, provider string, repo scm.Repository) []string {
	repos, _ := p.Repos.ScmRepositories(ns).List(labels.Everything())
	match := map[string]bool{}
	for _, gr := range repos {
		if scm.DeliveredFor(gr, provider, repo) {
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

// Serve serves the receiver on ln until ctx ends.
func (p *Receiver) Serve(ctx context.Context, ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle(WebhookPath, p.Handler())
	return httpserve.Serve(ctx, ln, mux)
}
