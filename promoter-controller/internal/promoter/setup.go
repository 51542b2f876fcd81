package promoter

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	_ "github.com/sluicehq/sluice/pkg/scm/builtin" // every provider
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Config is what the promoter needs beyond the shared flags.
type Config struct {
	// CacheDir holds the git cache.
	CacheDir string
	// WebhookAddress is where the webhook receiver listens; "" or "0" disables it.
	WebhookAddress string
}

// Promoter is the running promoter: its controllers, for the webhook receiver to enqueue into.
type Promoter struct {
	Strategies  *controller.Controller
	strategy    *StrategyReconciler
	resolver    *resolver
	webhookAddr net.Addr
	// leading reports whether this replica runs the reconcilers; only then can a delivery be
	// acted on.
	leading func() bool

	verifiersMu sync.Mutex
	verifiers   map[string]verifier
}

// WebhookAddr is where the webhook receiver listens, or nil when it is off.
func (p *Promoter) WebhookAddr() net.Addr { return p.webhookAddr }

// Setup registers the PromotionStrategy and PullRequest controllers on m.
func Setup(m *manager.Manager, cfg Config) (*Promoter, error) {
	cache, err := git.NewCache(cfg.CacheDir, m.Log)
	if err != nil {
		return nil, fmt.Errorf("git cache in %s: %w", cfg.CacheDir, err)
	}
	inf := m.SluiceInformers
	scmInf := inf.Scm().V1alpha1()
	res := &resolver{kube: m.Kube, repos: scmInf.ScmRepositories().Lister(), providers: scmInf.ScmProviders().Lister(), cache: cache}
	metrics := NewMetrics(m.Metrics.Registry)
	pi := inf.Promoter().V1alpha1()

	sr := &StrategyReconciler{
		Client: m.Sluice, Strategies: pi.PromotionStrategies().Lister(), PullRequests: pi.PullRequests().Lister(),
		Proposed: pi.ProposedCommits().Lister(), CommitStatuses: inf.Commitstatus().V1alpha1().CommitStatuses().Lister(),
		Gates: inf.Gating().V1alpha1().Gates().Lister(), Recorder: m.Recorder, Metrics: metrics, Log: m.Log,
		resolver: res, now: time.Now,
	}
	strategies := m.NewController("promotionstrategy", sr)
	prr := &PullRequestReconciler{Client: m.Sluice, PullRequests: pi.PullRequests().Lister(), Metrics: metrics, Log: m.Log, resolver: res, now: time.Now}
	prs := m.NewController("pullrequest", prr)
	sr.PullRequestQueue = prs

	add := func(err error) {
		if err == nil {
			return
		}
		m.Log.Error("cannot add event handler", "error", err)
	}
	_, err = pi.PromotionStrategies().Informer().AddEventHandler(handler.EnqueueObject(strategies))
	add(err)
	_, err = pi.PullRequests().Informer().AddEventHandler(handler.EnqueueObject(prs))
	add(err)
	_, err = pi.PullRequests().Informer().AddEventHandler(handler.EnqueueOwner(strategies, schema.GroupKind{Group: promoterv1alpha1.GroupName, Kind: "PromotionStrategy"}))
	add(err)
	byRepo := func(ns, repo string) []string {
		list, _ := sr.Strategies.PromotionStrategies(ns).List(labels.Everything())
		var keys []string
		for _, ps := range list {
			if ps.Spec.RepositoryRef.Name == repo {
				keys = append(keys, ps.Namespace+"/"+ps.Name)
			}
		}
		return keys
	}
	_, err = inf.Commitstatus().V1alpha1().CommitStatuses().Informer().AddEventHandler(handler.EnqueueMapped(strategies, func(obj metav1.Object) []string {
		cs, ok := obj.(*commitstatusv1alpha1.CommitStatus)
		if !ok {
			return nil
		}
		return byRepo(cs.Namespace, cs.Spec.RepositoryRef.Name)
	}))
	add(err)
	// A fixed ScmRepository or ScmProvider (a stalled strategy's usual cure) re-evaluates at once.
	_, err = scmInf.ScmRepositories().Informer().AddEventHandler(handler.EnqueueMapped(strategies, func(obj metav1.Object) []string {
		return byRepo(obj.GetNamespace(), obj.GetName())
	}))
	add(err)
	_, err = scmInf.ScmProviders().Informer().AddEventHandler(handler.EnqueueMapped(strategies, func(obj metav1.Object) []string {
		repos, _ := res.repos.ScmRepositories(obj.GetNamespace()).List(labels.Everything())
		var keys []string
		for _, gr := range repos {
			if gr.Spec.ProviderRef.Name == obj.GetName() {
				keys = append(keys, byRepo(gr.Namespace, gr.Name)...)
			}
		}
		return keys
	}))
	add(err)
	_, err = inf.Gating().V1alpha1().Gates().Informer().AddEventHandler(handler.EnqueueMapped(strategies, func(obj metav1.Object) []string {
		g, ok := obj.(*gatingv1alpha1.Gate)
		if !ok {
			return nil
		}
		list, _ := sr.Strategies.List(labels.Everything())
		var keys []string
		for _, ps := range list {
			if referencesGate(ps, g.Namespace, g.Name) {
				keys = append(keys, ps.Namespace+"/"+ps.Name)
			}
		}
		return keys
	}))
	add(err)
	p := &Promoter{Strategies: strategies, strategy: sr, resolver: res, leading: m.Leading}
	if cfg.WebhookAddress != "" && cfg.WebhookAddress != "0" {
		ln, err := net.Listen("tcp", cfg.WebhookAddress)
		if err != nil {
			return nil, fmt.Errorf("webhook receiver on %s: %w", cfg.WebhookAddress, err)
		}
		p.webhookAddr = ln.Addr()
		m.AddServer(func(ctx context.Context) error { return p.ServeWebhooks(ctx, ln) })
	}
	return p, nil
}

func referencesGate(ps *promoterv1alpha1.PromotionStrategy, ns, name string) bool {
	for _, e := range ps.Spec.Environments {
		if e.Gates == nil {
			continue
		}
		for _, r := range e.Gates.Refs {
			gns := r.Namespace
			if gns == "" {
				gns = ps.Namespace
			}
			if gns == ns && r.Name == name {
				return true
			}
		}
	}
	return false
}
