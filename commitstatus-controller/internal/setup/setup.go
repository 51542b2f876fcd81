// Package setup wires the commitstatus-controller into a manager: the CommitStatus reconciler,
// the watches that bring a CommitStatus back when its ScmRepository or ScmProvider changes, the
// reconcilers of ScmProvider and ScmRepository status, and the SCM metrics.
package setup

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/statuses"
	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	sluiceinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
	"github.com/sluicehq/sluice/pkg/scm/scmmetrics"

	// Every built-in SCM provider.
	_ "github.com/sluicehq/sluice/pkg/scm/builtin"
)

// ControllerName names the controller's queue, logs and metrics.
const ControllerName = "commitstatuses"

// Config is the commitstatus-controller's own configuration.
type Config struct {
	// RecheckInterval: see statuses.Reconciler.RecheckInterval; it also paces ScmProviders and
	// ScmRepositories waiting for a Secret that is not watched.
	RecheckInterval time.Duration
	// CallTimeout: see statuses.Reconciler.CallTimeout.
	CallTimeout time.Duration
	// CredentialsTTL: see resolve.Resolver.CredentialsTTL.
	CredentialsTTL time.Duration
	// RateLimitMaxWait is how long a call waits in line for an SCM's rate-limit pause before the
	// CommitStatus is requeued for when the pause ends, freeing the worker.
	RateLimitMaxWait time.Duration

	// Limiters and Resolver hooks for tests; nil means the process-wide defaults.
	Limiters *ratelimit.Registry
}

// Defaults returns the configuration the flags start from.
func Defaults() Config {
	return Config{
		RecheckInterval:  statuses.DefaultRecheckInterval,
		CallTimeout:      statuses.DefaultCallTimeout,
		CredentialsTTL:   resolve.DefaultCredentialsTTL,
		RateLimitMaxWait: 5 * time.Second,
	}
}

// AddFlags registers the controller's flags on fs, starting from Defaults.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	*c = Defaults()
	fs.DurationVar(&c.RecheckInterval, "stalled-recheck-interval", c.RecheckInterval,
		"How often a CommitStatus stalled on a Secret or an SCM refusal, or an ScmProvider or ScmRepository waiting for a Secret that is not watched, is looked at again; no SCM call is made unless the object or the credentials changed.")
	fs.DurationVar(&c.CallTimeout, "scm-call-timeout", c.CallTimeout,
		"Longest time one SCM call may take, waits for the shared rate limiter included.")
	fs.DurationVar(&c.CredentialsTTL, "credentials-cache-ttl", c.CredentialsTTL,
		"How long a Secret read is reused; a rotated token is in use within this time.")
	fs.DurationVar(&c.RateLimitMaxWait, "scm-rate-limit-max-wait", c.RateLimitMaxWait,
		"Longest wait for an SCM's rate-limit pause inside one call; longer pauses requeue the CommitStatus for when the pause ends.")
}

// Validate reports unusable values.
func (c Config) Validate() error {
	if c.RecheckInterval <= 0 || c.CallTimeout <= 0 || c.CredentialsTTL <= 0 || c.RateLimitMaxWait < 0 {
		return fmt.Errorf("--stalled-recheck-interval, --scm-call-timeout and --credentials-cache-ttl must be positive, and --scm-rate-limit-max-wait not negative")
	}
	return nil
}

// Index names.
const (
	byRepository = "repository"
	byProvider   = "provider"
)

// Setup registers the CommitStatus reconciler on m.
func Setup(m *manager.Manager, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	scmMetrics := scmmetrics.New(m.Metrics, cfg.Limiters)

	statusInformer := m.SluiceInformers.Commitstatus().V1alpha1().CommitStatuses()
	// ScmRepositories and ScmProviders are referenced objects: they are read whatever shard label
	// the CommitStatuses carry, so their factory is scoped by namespace only.
	scmFactory := sluiceinformers.NewSharedInformerFactoryWithOptions(m.Sluice, 0, sluiceinformers.WithNamespace(m.Options.Namespace))
	repoInformer := scmFactory.Scm().V1alpha1().ScmRepositories()
	providerInformer := scmFactory.Scm().V1alpha1().ScmProviders()

	if err := statusInformer.Informer().AddIndexers(cache.Indexers{byRepository: func(obj any) ([]string, error) {
		cs, ok := obj.(*commitstatusv1alpha1.CommitStatus)
		if !ok {
			return nil, nil
		}
		return []string{cs.Namespace + "/" + cs.Spec.RepositoryRef.Name}, nil
	}}); err != nil {
		return err
	}
	if err := repoInformer.Informer().AddIndexers(cache.Indexers{byProvider: func(obj any) ([]string, error) {
		repo, ok := obj.(*scmv1alpha1.ScmRepository)
		if !ok {
			return nil, nil
		}
		return []string{repo.Namespace + "/" + repo.Spec.ProviderRef.Name}, nil
	}}); err != nil {
		return err
	}

	resolver := &resolve.Resolver{
		Repositories:   repoInformer.Lister(),
		Providers:      providerInformer.Lister(),
		Kube:           m.Kube,
		Metrics:        scmMetrics,
		Limiters:       cfg.Limiters,
		MaxWait:        cfg.RateLimitMaxWait,
		UserAgent:      "sluice-commitstatus-controller",
		CredentialsTTL: cfg.CredentialsTTL,
	}
	reconciler := statuses.New()
	reconciler.Statuses = statusInformer.Lister()
	reconciler.Client = m.Sluice
	reconciler.Resolver = resolver
	reconciler.Recorder = m.Recorder
	reconciler.Metrics = statuses.NewMetrics(m.Metrics)
	reconciler.Log = m.Log.With("controller", ControllerName)
	reconciler.RecheckInterval = cfg.RecheckInterval
	reconciler.CallTimeout = cfg.CallTimeout
	c := m.NewController(ControllerName, reconciler)

	statusesOf := func(repoKey string) []string {
		objs, err := statusInformer.Informer().GetIndexer().ByIndex(byRepository, repoKey)
		if err != nil {
			return nil
		}
		keys := make([]string, 0, len(objs))
		for _, o := range objs {
			if cs, ok := o.(*commitstatusv1alpha1.CommitStatus); ok {
				keys = append(keys, handler.Key(cs))
			}
		}
		return keys
	}
	if _, err := statusInformer.Informer().AddEventHandler(handler.EnqueueObject(c)); err != nil {
		return err
	}
	if _, err := repoInformer.Informer().AddEventHandler(onSpecChange(c, func(repo *scmv1alpha1.ScmRepository) []string {
		return statusesOf(handler.Key(repo))
	}, nil, nil)); err != nil {
		return err
	}
	statusesOfProvider := func(p *scmv1alpha1.ScmProvider) []string {
		repos, err := repoInformer.Informer().GetIndexer().ByIndex(byProvider, handler.Key(p))
		if err != nil {
			return nil
		}
		var keys []string
		for _, o := range repos {
			if repo, ok := o.(*scmv1alpha1.ScmRepository); ok {
				keys = append(keys, statusesOf(handler.Key(repo))...)
			}
		}
		return keys
	}
	// A provider that turns Ready (its Secret was created or fixed) brings back at once the
	// CommitStatuses that were waiting for it, instead of at their next recheck.
	if _, err := providerInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			before, okOld := oldObj.(*scmv1alpha1.ScmProvider)
			after, okNew := newObj.(*scmv1alpha1.ScmProvider)
			if okOld && okNew && !conditions.IsTrue(before.Status.Conditions, conditions.Ready) && conditions.IsTrue(after.Status.Conditions, conditions.Ready) {
				for _, key := range statusesOfProvider(after) {
					c.Enqueue(key)
				}
			}
		},
	}); err != nil {
		return err
	}
	if _, err := providerInformer.Informer().AddEventHandler(onSpecChange(c, statusesOfProvider,
		// Touching an ScmProvider (any annotation) makes the controller read its Secret again now.
		func(p *scmv1alpha1.ScmProvider) { resolver.Invalidate(handler.Key(p)) },
		func(p *scmv1alpha1.ScmProvider) { resolver.Forget(handler.Key(p)) },
	)); err != nil {
		return err
	}

	c.WaitFor(repoInformer.Informer().HasSynced, providerInformer.Informer().HasSynced)
	runSecretWatch, err := setupScmObjects(m, cfg, resolver, repoInformer, providerInformer)
	if err != nil {
		return err
	}
	m.AddRunnable(func(ctx context.Context) error {
		go runSecretWatch(ctx)
		scmFactory.Start(ctx.Done())
		<-ctx.Done()
		scmFactory.Shutdown()
		return nil
	})
	return nil
}

// onSpecChange enqueues the keys fn derives when an object is added or deleted, or when its
// spec (generation) or annotations change; updated and deleted, when set, are told first.
// Status-only writes by other controllers are ignored, so they do not fan out to every
// CommitStatus of a repository.
func onSpecChange[T interface {
	*scmv1alpha1.ScmRepository | *scmv1alpha1.ScmProvider
	GetGeneration() int64
	GetAnnotations() map[string]string
}](c handler.Enqueuer, fn func(T) []string, updated, deleted func(T)) cache.ResourceEventHandler {
	enqueue := func(obj T) {
		for _, key := range fn(obj) {
			c.Enqueue(key)
		}
	}
	asT := func(obj any) (T, bool) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		t, ok := obj.(T)
		return t, ok
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if t, ok := asT(obj); ok {
				enqueue(t)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, okOld := asT(oldObj)
			n, okNew := asT(newObj)
			if !okOld || !okNew {
				return
			}
			if o.GetGeneration() == n.GetGeneration() && maps.Equal(o.GetAnnotations(), n.GetAnnotations()) {
				return
			}
			if updated != nil {
				updated(n)
			}
			enqueue(n)
		},
		DeleteFunc: func(obj any) {
			if t, ok := asT(obj); ok {
				if deleted != nil {
					deleted(t)
				}
				enqueue(t)
			}
		},
	}
}
