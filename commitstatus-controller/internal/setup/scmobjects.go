package setup

import (
	"context"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/scmobjects"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	scminformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
)

// Queue names of the ScmProvider and ScmRepository status reconcilers.
const (
	ProviderControllerName   = "scmproviders"
	RepositoryControllerName = "scmrepositories"
)

var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// setupScmObjects registers the reconcilers that fill the status of ScmProviders and
// ScmRepositories, on the informers the CommitStatus reconciler shares. It returns what must run
// beside those informers: the Secret watch, when the ServiceAccount may have one.
func setupScmObjects(m *manager.Manager, cfg Config, resolver *resolve.Resolver,
	repos scminformers.ScmRepositoryInformer, providers scminformers.ScmProviderInformer) (func(context.Context), error) {
	var selector labels.Selector
	if s := m.Options.WatchLabelSelector; s != "" {
		parsed, err := labels.Parse(s)
		if err != nil {
			return nil, err
		}
		selector = parsed
	}
	for _, inf := range []cache.SharedIndexInformer{repos.Informer(), providers.Informer()} {
		if err := inf.AddIndexers(scmobjects.SecretIndexers); err != nil {
			return nil, err
		}
	}
	log := m.Log.With("controller", ProviderControllerName)
	watched, err := canWatchSecrets(m.Kube, m.Options.Namespace)
	if err != nil {
		log.Warn("could not ask whether Secrets may be watched; they are not", "error", err)
	}
	if watched {
		log.Info("Secrets are watched (metadata only): ScmProviders and ScmRepositories waiting for a Secret are checked again when it changes")
	} else {
		log.Info("Secrets are not watched (no list and watch permission, see the chart's secretAccess.watch): "+
			"ScmProviders and ScmRepositories waiting for a Secret are checked again periodically", "interval", cfg.RecheckInterval)
	}

	pc := m.NewController(ProviderControllerName, &scmobjects.ProviderReconciler{
		Providers: providers.Lister(), Client: m.Sluice, Checker: resolver, Recorder: m.Recorder,
		Log: log, Selector: selector, SecretsWatched: watched, RecheckInterval: cfg.RecheckInterval,
	})
	rc := m.NewController(RepositoryControllerName, &scmobjects.RepositoryReconciler{
		Repositories: repos.Lister(), Providers: providers.Lister(), Kube: m.Kube, Client: m.Sluice, Recorder: m.Recorder,
		Log: m.Log.With("controller", RepositoryControllerName), Selector: selector, SecretsWatched: watched,
		RecheckInterval: cfg.RecheckInterval,
	})

	if _, err := providers.Informer().AddEventHandler(onSpecChange(pc,
		func(p *scmv1alpha1.ScmProvider) []string { return []string{handler.Key(p)} },
		// A touch must reach a fresh Secret read, whichever handler runs first.
		func(p *scmv1alpha1.ScmProvider) { resolver.Invalidate(handler.Key(p)) }, nil)); err != nil {
		return nil, err
	}
	if _, err := repos.Informer().AddEventHandler(onSpecChange(rc,
		func(r *scmv1alpha1.ScmRepository) []string { return []string{handler.Key(r)} }, nil, nil)); err != nil {
		return nil, err
	}
	if _, err := providers.Informer().AddEventHandler(onProviderVerdict(rc, repos.Informer().GetIndexer())); err != nil {
		return nil, err
	}
	pc.WaitFor(providers.Informer().HasSynced)
	rc.WaitFor(repos.Informer().HasSynced, providers.Informer().HasSynced)
	if !watched {
		return func(context.Context) {}, nil
	}

	// Referenced Secrets carry no shard label, so the watch is scoped by namespace only.
	secrets := metadatainformer.NewFilteredMetadataInformer(m.Metadata, secretsGVR, m.Options.Namespace, 0, cache.Indexers{}, nil).Informer()
	if err := secrets.SetTransform(nameOnly); err != nil {
		return nil, err
	}
	providerIndex, repoIndex := providers.Informer().GetIndexer(), repos.Informer().GetIndexer()
	if _, err := secrets.AddEventHandler(handler.EnqueueMapped(pc, func(s metav1.Object) []string {
		keys := scmobjects.Referrers(providerIndex, s)
		for _, key := range keys {
			// The resolver keeps Secret reads for a while; this one is known to be stale.
			resolver.Invalidate(key)
		}
		return keys
	})); err != nil {
		return nil, err
	}
	if _, err := secrets.AddEventHandler(handler.EnqueueMapped(rc, func(s metav1.Object) []string {
		return scmobjects.Referrers(repoIndex, s)
	})); err != nil {
		return nil, err
	}
	return func(ctx context.Context) { secrets.Run(ctx.Done()) }, nil
}

// onProviderVerdict enqueues the ScmRepositories of an ScmProvider when what they read from it
// changes: the provider appears or goes, its spec or annotations change, or its Ready condition.
func onProviderVerdict(q handler.Enqueuer, repos cache.Indexer) cache.ResourceEventHandler {
	enqueue := func(p *scmv1alpha1.ScmProvider) {
		objs, err := repos.ByIndex(byProvider, handler.Key(p))
		if err != nil {
			return
		}
		for _, o := range objs {
			if r, ok := o.(*scmv1alpha1.ScmRepository); ok {
				q.Enqueue(handler.Key(r))
			}
		}
	}
	asProvider := func(obj any) (*scmv1alpha1.ScmProvider, bool) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		p, ok := obj.(*scmv1alpha1.ScmProvider)
		return p, ok
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := asProvider(obj); ok {
				enqueue(p)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, okOld := asProvider(oldObj)
			n, okNew := asProvider(newObj)
			if okOld && okNew && scmobjects.ProviderVerdictChanged(o, n) {
				enqueue(n)
			}
		},
		DeleteFunc: func(obj any) {
			if p, ok := asProvider(obj); ok {
				enqueue(p)
			}
		},
	}
}

// nameOnly keeps what the Secret watch needs to find referrers. Metadata can still hold secret
// material (a last-applied-configuration annotation holds the whole Secret), so nothing else
// stays in memory.
func nameOnly(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Namespace: m.Namespace, Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion,
	}}, nil
}

// canWatchSecrets asks the API server whether this process may list and watch Secrets in its
// watch scope. The chart grants it only with secretAccess.watch; without it, objects waiting for
// a Secret are looked at again on a timer instead.
func canWatchSecrets(kube kubernetes.Interface, namespace string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, verb := range []string{"list", "watch"} {
		review, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: namespace, Verb: verb, Resource: secretsGVR.Resource,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		if !review.Status.Allowed {
			return false, nil
		}
	}
	return true, nil
}
