package setup

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	commitstatusinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/commitstatus/v1alpha1"
	scminformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/scm/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/scm/scmmetrics"
)

// Index names.
const (
	byRepository = "repository"
	byProvider   = "provider"
)

// wiring is what the reconcilers of one process share: informers, their indexes, the resolver,
// and the controllers once added.
type wiring struct {
	m   *manager.Manager
	cfg Config

	statuses  commitstatusinformers.CommitStatusInformer
	repos     scminformers.ScmRepositoryInformer
	providers scminformers.ScmProviderInformer
	resolver  *resolve.Resolver

	commitStatuses, scmProviders, scmRepositories *controller.Controller
	secretsWatched                                bool
}

func newWiring(m *manager.Manager, cfg Config) (*wiring, error) {
	w := &wiring{
		m: m, cfg: cfg,
		statuses: m.SluiceInformers.Commitstatus().V1alpha1().CommitStatuses(),
		// ScmRepositories and ScmProviders are referenced objects: they are read whatever shard
		// label the CommitStatuses carry.
		repos:     m.ReferenceInformers.Sluice.Scm().V1alpha1().ScmRepositories(),
		providers: m.ReferenceInformers.Sluice.Scm().V1alpha1().ScmProviders(),
	}
	indexes := []struct {
		informer cache.SharedIndexInformer
		indexers cache.Indexers
	}{
		{w.statuses.Informer(), cache.Indexers{byRepository: repositoryOf}},
		{w.repos.Informer(), cache.Indexers{byProvider: providerOf}},
		{w.repos.Informer(), secretIndexers},
		{w.providers.Informer(), secretIndexers},
	}
	for _, idx := range indexes {
		if err := idx.informer.AddIndexers(idx.indexers); err != nil {
			return nil, err
		}
	}
	w.resolver = &resolve.Resolver{
		Repositories:   w.repos.Lister(),
		Providers:      w.providers.Lister(),
		Kube:           m.Kube,
		Metrics:        scmmetrics.New(m.Metrics, cfg.Limiters),
		Limiters:       cfg.Limiters,
		MaxWait:        cfg.RateLimitMaxWait,
		UserAgent:      "sluice-commitstatus-controller",
		CredentialsTTL: cfg.CredentialsTTL,
		Clock:          m.Clock,
	}
	w.decideSecretWatch()
	return w, nil
}

func repositoryOf(obj any) ([]string, error) {
	if cs, ok := obj.(*commitstatusv1alpha1.CommitStatus); ok {
		return []string{cs.Namespace + "/" + cs.Spec.RepositoryRef.Name}, nil
	}
	return nil, nil
}

func providerOf(obj any) ([]string, error) {
	if repo, ok := obj.(*scmv1alpha1.ScmRepository); ok {
		return []string{repo.Namespace + "/" + repo.Spec.ProviderRef.Name}, nil
	}
	return nil, nil
}

// statusesOf returns the keys of the CommitStatuses of an ScmRepository.
func (w *wiring) statusesOf(repoKey string) []string {
	return keysByIndex(w.statuses.Informer().GetIndexer(), byRepository, repoKey)
}

// statusesOfProvider returns the keys of the CommitStatuses of every ScmRepository of p.
func (w *wiring) statusesOfProvider(p *scmv1alpha1.ScmProvider) []string {
	var keys []string
	for _, repo := range keysByIndex(w.repos.Informer().GetIndexer(), byProvider, handler.Key(p)) {
		keys = append(keys, w.statusesOf(repo)...)
	}
	return keys
}

// keysByIndex returns the keys of the objects indexed under value.
func keysByIndex(indexer cache.Indexer, index, value string) []string {
	objs, err := indexer.ByIndex(index, value)
	if err != nil {
		return nil
	}
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		if obj, ok := handler.Object(o); ok {
			keys = append(keys, handler.Key(obj))
		}
	}
	return keys
}

// onSpecChange enqueues the keys fn derives when an object is added or deleted, or when its
// spec or metadata change; updated and deleted, when set, are told first. Status-only writes by
// other controllers are ignored, so they do not fan out to every CommitStatus of a repository.
func onSpecChange[T metav1.Object](q handler.Enqueuer, fn func(T) []string, updated, deleted func(T)) cache.ResourceEventHandler {
	enqueue := func(obj T) { handler.EnqueueKeys(q, fn(obj)) }
	return handler.OnSpecOrMetadataChange(handler.Funcs[T]{
		Add: enqueue,
		Update: func(_, obj T) {
			if updated != nil {
				updated(obj)
			}
			enqueue(obj)
		},
		Delete: func(obj T) {
			if deleted != nil {
				deleted(obj)
			}
			enqueue(obj)
		},
	})
}
