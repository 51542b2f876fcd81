package setup

import (
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/commitstatus"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
)

// addCommitStatuses registers the CommitStatus reconciler, brought back by its own changes and
// by spec changes of its ScmRepository and ScmProvider.
func (w *wiring) addCommitStatuses() error {
	r := commitstatus.New()
	r.Statuses = w.statuses.Lister()
	r.Client = w.m.Sluice
	r.Resolver = w.resolver
	r.Recorder = w.m.Recorder
	r.Metrics = commitstatus.NewMetrics(w.m.Metrics)
	r.Log = w.m.Log.With("controller", ControllerName)
	r.RecheckInterval = w.cfg.RecheckInterval
	r.CallTimeout = w.cfg.CallTimeout
	r.Clock = w.m.Clock
	c := w.m.NewController(ControllerName, r)
	w.commitStatuses = c

	err := handler.Register(
		handler.Watch(w.statuses.Informer(), handler.EnqueueObject(c)),
		handler.Watch(w.repos.Informer(), onSpecChange(c, func(repo *scmv1alpha1.ScmRepository) []string {
			return w.statusesOf(handler.Key(repo))
		}, nil, nil)),
		// A provider that turns Ready (its Secret was created or fixed) brings back at once the
		// CommitStatuses that were waiting for it, instead of at their next recheck.
		handler.Watch(w.providers.Informer(), handler.Funcs[*scmv1alpha1.ScmProvider]{
			Update: func(before, after *scmv1alpha1.ScmProvider) {
				if !conditions.IsTrue(before.Status.Conditions, conditions.Ready) && conditions.IsTrue(after.Status.Conditions, conditions.Ready) {
					handler.EnqueueKeys(c, w.statusesOfProvider(after))
				}
			},
		}),
		handler.Watch(w.providers.Informer(), onSpecChange(c, w.statusesOfProvider,
			// Touching an ScmProvider (any annotation) makes the controller read its Secret again now.
			func(p *scmv1alpha1.ScmProvider) { w.resolver.Invalidate(handler.Key(p)) },
			func(p *scmv1alpha1.ScmProvider) { w.resolver.Forget(handler.Key(p)) },
		)),
	)
	if err != nil {
		return err
	}
	c.WaitFor(w.repos.Informer().HasSynced, w.providers.Informer().HasSynced)
	return nil
}
