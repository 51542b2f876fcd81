package setup

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/scmimport"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/statushook"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/scm"
)

// ImportControllerName is the queue of the import, keyed by PromotionStrategy.
const ImportControllerName = "scmimports"

// addImports registers the import of SCM statuses for PromotionStrategies, when their CRD is
// served: a workload cluster without the promoter has none to import for.
func (w *wiring) addImports() error {
	if !w.cfg.Import {
		return nil
	}
	served, err := promotionStrategiesServed(w)
	if err != nil {
		return err
	}
	if !served {
		w.m.Log.Info("the PromotionStrategy CRD is not installed: the import of SCM statuses is off until the controller restarts")
		return nil
	}
	// The main factory: a shard imports only for the strategies its selector matches.
	strategies := w.m.SluiceInformers.Promoter().V1alpha1().PromotionStrategies()
	shardKeys, err := selectorKeys(w.m.Options.WatchLabelSelector)
	if err != nil {
		return err
	}
	r := &scmimport.Reconciler{
		ShardKeys:  shardKeys,
		Strategies: strategies.Lister(), Statuses: w.statuses.Lister(), Client: w.m.Sluice,
		Resolver: w.resolver, Recorder: w.m.Recorder, Metrics: scmimport.NewMetrics(w.m.Metrics),
		Log: w.m.Log.With("controller", ImportControllerName), PollInterval: w.cfg.ImportPollInterval,
		CallTimeout: w.cfg.CallTimeout,
	}
	c := w.m.NewController(ImportControllerName, r)
	// The strategy's commits, repository or labels (its shard) changed: the promoter writes
	// status often, and only these change what is imported.
	if _, err := strategies.Informer().AddEventHandler(handler.Funcs[*promoterv1alpha1.PromotionStrategy]{
		Add: func(ps *promoterv1alpha1.PromotionStrategy) { c.Enqueue(handler.Key(ps)) },
		Update: func(before, after *promoterv1alpha1.PromotionStrategy) {
			if !slices.Equal(scmimport.TrackedSHAs(before), scmimport.TrackedSHAs(after)) ||
				before.Spec.RepositoryRef != after.Spec.RepositoryRef || before.Spec.Suspend != after.Spec.Suspend ||
				!maps.Equal(before.Labels, after.Labels) {
				c.Enqueue(handler.Key(after))
			}
		},
	}); err != nil {
		return err
	}
	c.WaitFor(strategies.Informer().HasSynced, w.repos.Informer().HasSynced, w.providers.Informer().HasSynced)
	if w.cfg.WebhookListener == nil && (w.cfg.WebhookAddress == "" || w.cfg.WebhookAddress == "0") {
		return nil
	}
	receiver := &statushook.Receiver{
		Providers: w.providers.Lister(), Repos: w.repos.Lister(), Strategies: strategies.Lister(),
		Queue: c, Leading: w.m.Leading,
		Ready: func() bool {
			return strategies.Informer().HasSynced() && w.repos.Informer().HasSynced() && w.providers.Informer().HasSynced()
		},
		Verify: func(ctx context.Context, p *scmv1alpha1.ScmProvider) (scm.Provider, error) {
			sp, rerr := w.resolver.Provider(ctx, p)
			if rerr != nil {
				return nil, rerr
			}
			return sp, nil
		},
	}
	ln := w.cfg.WebhookListener
	if ln == nil {
		if ln, err = net.Listen("tcp", w.cfg.WebhookAddress); err != nil {
			return fmt.Errorf("status webhook receiver on %s: %w", w.cfg.WebhookAddress, err)
		}
	}
	w.m.AddServer(func(ctx context.Context) error { return receiver.Serve(ctx, ln) })
	return nil
}

// selectorKeys returns the label keys a --watch-label-selector names, sorted; none without one.
func selectorKeys(selector string) ([]string, error) {
	if selector == "" {
		return nil, nil
	}
	parsed, err := labels.Parse(selector)
	if err != nil {
		return nil, err
	}
	reqs, _ := parsed.Requirements()
	keys := make([]string, 0, len(reqs))
	for _, req := range reqs {
		keys = append(keys, req.Key())
	}
	slices.Sort(keys)
	return slices.Compact(keys), nil
}

// promotionStrategiesServed asks discovery whether the API server serves PromotionStrategies.
func promotionStrategiesServed(w *wiring) (bool, error) {
	list, err := w.m.Kube.Discovery().ServerResourcesForGroupVersion(promoterv1alpha1.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("asking whether PromotionStrategies are served: %w", err)
	}
	for _, r := range list.APIResources {
		if r.Name == "promotionstrategies" {
			return true, nil
		}
	}
	return false, nil
}
