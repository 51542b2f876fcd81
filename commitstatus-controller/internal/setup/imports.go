package setup

import (
	"context"
	"fmt"
	"net"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

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
	strategies := w.m.SluiceInformers.Promoter().V1alpha1().PromotionStrategies()
	r := &scmimport.Reconciler{
		Strategies: strategies.Lister(), Statuses: w.statuses.Lister(), Client: w.m.Sluice,
		Resolver: w.resolver, Recorder: w.m.Recorder, Metrics: scmimport.NewMetrics(w.m.Metrics),
		Log: w.m.Log.With("controller", ImportControllerName), PollInterval: w.cfg.ImportPollInterval,
		CallTimeout: w.cfg.CallTimeout,
	}
	c := w.m.NewController(ImportControllerName, r)
	// The strategy's commits or repository changed: the promoter writes status often, and only
	// these change what is imported.
	if _, err := strategies.Informer().AddEventHandler(handler.Funcs[*promoterv1alpha1.PromotionStrategy]{
		Add: func(ps *promoterv1alpha1.PromotionStrategy) { c.Enqueue(handler.Key(ps)) },
		Update: func(before, after *promoterv1alpha1.PromotionStrategy) {
			if !slices.Equal(scmimport.TrackedSHAs(before), scmimport.TrackedSHAs(after)) ||
				before.Spec.RepositoryRef != after.Spec.RepositoryRef || before.Spec.Suspend != after.Spec.Suspend {
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
