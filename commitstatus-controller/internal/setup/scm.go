package setup

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/readiness"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/scmprovider"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/scmrepository"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
)

// readinessOptions are the settings of the ScmProvider and ScmRepository reconcilers.
func (w *wiring) readinessOptions(queue string) (readiness.Options, error) {
	var selector labels.Selector
	if s := w.m.Options.WatchLabelSelector; s != "" {
		parsed, err := labels.Parse(s)
		if err != nil {
			return readiness.Options{}, err
		}
		selector = parsed
	}
	return readiness.Options{
		Client: w.m.Sluice, Recorder: w.m.Recorder, Log: w.m.Log.With("controller", queue),
		Selector: selector, SecretsWatched: w.secretsWatched, RecheckInterval: w.cfg.RecheckInterval,
	}, nil
}

// addScmProviders registers the reconciler of ScmProvider status.
func (w *wiring) addScmProviders() error {
	opts, err := w.readinessOptions(ProviderControllerName)
	if err != nil {
		return err
	}
	c := w.m.NewController(ProviderControllerName, &scmprovider.Reconciler{
		Options: opts, Providers: w.providers.Lister(), Checker: w.resolver,
	})
	w.scmProviders = c
	if err := handler.Register(handler.Watch(w.providers.Informer(), onSpecChange(c,
		func(p *scmv1alpha1.ScmProvider) []string { return []string{handler.Key(p)} },
		// A touch must reach a fresh Secret read, whichever handler runs first.
		func(p *scmv1alpha1.ScmProvider) { w.resolver.Invalidate(handler.Key(p)) }, nil))); err != nil {
		return err
	}
	c.WaitFor(w.providers.Informer().HasSynced)
	return nil
}

// addScmRepositories registers the reconciler of ScmRepository status, brought back by its own
// spec changes and by changes of what it reads from its ScmProvider.
func (w *wiring) addScmRepositories() error {
	opts, err := w.readinessOptions(RepositoryControllerName)
	if err != nil {
		return err
	}
	c := w.m.NewController(RepositoryControllerName, &scmrepository.Reconciler{
		Options: opts, Repositories: w.repos.Lister(), Providers: w.providers.Lister(), Kube: w.m.Kube,
	})
	w.scmRepositories = c
	if err := handler.Register(
		handler.Watch(w.repos.Informer(), onSpecChange(c,
			func(r *scmv1alpha1.ScmRepository) []string { return []string{handler.Key(r)} }, nil, nil)),
		handler.Watch(w.providers.Informer(), onProviderVerdict(c, w.repos.Informer().GetIndexer())),
	); err != nil {
		return err
	}
	c.WaitFor(w.repos.Informer().HasSynced, w.providers.Informer().HasSynced)
	return nil
}

// onProviderVerdict enqueues the ScmRepositories of an ScmProvider when what they read from it
// changes: the provider appears or goes, its spec or annotations change, or its Ready condition.
func onProviderVerdict(q handler.Enqueuer, repos cache.Indexer) cache.ResourceEventHandler {
	enqueue := func(p *scmv1alpha1.ScmProvider) {
		handler.EnqueueKeys(q, keysByIndex(repos, byProvider, handler.Key(p)))
	}
	return handler.Funcs[*scmv1alpha1.ScmProvider]{
		Add: enqueue,
		Update: func(o, n *scmv1alpha1.ScmProvider) {
			if scmrepository.ProviderVerdictChanged(o, n) {
				enqueue(n)
			}
		},
		Delete: enqueue,
	}
}
