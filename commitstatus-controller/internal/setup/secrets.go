package setup

import (
	"context"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
)

var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// decideSecretWatch asks whether the ServiceAccount may watch Secrets, and says what follows.
func (w *wiring) decideSecretWatch() {
	log := w.m.Log.With("controller", ProviderControllerName)
	watched, err := canWatchSecrets(w.m.Kube, w.m.Options.Namespace)
	if err != nil {
		log.Warn("could not ask whether Secrets may be watched; they are not", "error", err)
	}
	if watched {
		log.Info("Secrets are watched (metadata only): ScmProviders and ScmRepositories waiting for a Secret are checked again when it changes")
	} else {
		log.Info("Secrets are not watched (no list and watch permission, see the chart's secretAccess.watch): "+
			"ScmProviders and ScmRepositories waiting for a Secret are checked again periodically", "interval", w.cfg.RecheckInterval)
	}
	w.secretsWatched = watched
}

// watchSecrets brings back the ScmProviders and ScmRepositories that name a Secret when it
// changes, when Secrets may be watched.
func (w *wiring) watchSecrets() error {
	if !w.secretsWatched {
		return nil
	}
	// Referenced Secrets carry no shard label. The transform applies to every user of this
	// informer: none may need more of a Secret than its name.
	secrets := w.m.ReferenceInformers.Metadata.ForResource(secretsGVR).Informer()
	if err := secrets.SetTransform(nameOnly); err != nil {
		return err
	}
	providers, repos := w.providers.Informer().GetIndexer(), w.repos.Informer().GetIndexer()
	return handler.Register(
		handler.Watch(secrets, handler.EnqueueMapped(w.scmProviders, func(s metav1.Object) []string {
			keys := referrers(providers, s)
			for _, key := range keys {
				// The resolver keeps Secret reads for a while; this one is known to be stale.
				w.resolver.Invalidate(key)
			}
			return keys
		})),
		handler.Watch(secrets, handler.EnqueueMapped(w.scmRepositories, func(s metav1.Object) []string {
			return referrers(repos, s)
		})),
	)
}

// bySecret indexes ScmProviders and ScmRepositories by the "namespace/name" of each Secret they
// name, so a Secret event finds its referrers without a scan.
const bySecret = "secret"

// secretIndexers are the indexers to add to the ScmProvider and ScmRepository informers.
var secretIndexers = cache.Indexers{bySecret: secretsOf}

func secretsOf(obj any) ([]string, error) {
	switch o := obj.(type) {
	case *scmv1alpha1.ScmProvider:
		var keys []string
		if ref := o.Spec.SecretRef; ref != nil {
			keys = append(keys, o.Namespace+"/"+ref.Name)
		}
		if b := o.Spec.CABundle; b != nil && b.Kind != "ConfigMap" && (o.Spec.SecretRef == nil || b.Name != o.Spec.SecretRef.Name) {
			keys = append(keys, o.Namespace+"/"+b.Name)
		}
		return keys, nil
	case *scmv1alpha1.ScmRepository:
		if a := o.Spec.Auth; a != nil {
			return []string{o.Namespace + "/" + a.SecretRef.Name}, nil
		}
	}
	return nil, nil
}

// referrers returns the keys of the objects in indexer that name the Secret.
func referrers(indexer cache.Indexer, secret metav1.Object) []string {
	return keysByIndex(indexer, bySecret, handler.Key(secret))
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
