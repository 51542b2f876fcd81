package setup

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/promoter-controller/internal/pullrequest"
)

// addPullRequests registers the PullRequest reconciler, brought back by its changes (but its own
// status writes that leave it waiting: WakesOnStatus), by its
// ScmRepository's (a PullRequest stalled on its repository, a revert's say, which no strategy
// owns), and by a CRD that comes or goes.
func (w *wiring) addPullRequests() error {
	m := w.m
	informer := m.SluiceInformers.Promoter().V1alpha1().PullRequests()
	c := m.NewController("pullrequest", &pullrequest.Reconciler{
		Client: m.Sluice, PullRequests: informer.Lister(), Repositories: w.resolver, Kinds: w.kinds,
		Recorder: m.Recorder, Metrics: w.metrics, Log: m.Log, Clock: m.Clock, Merges: w.merges,
	})
	w.pullRequests = c
	w.kinds.OnChange(func() { handler.EnqueueStore(c, informer.Informer().GetStore()) })
	return handler.Register(
		handler.Watch(informer.Informer(), handler.ExceptStatusWrites(handler.EnqueueObject(c), pullrequest.WakesOnStatus)),
		handler.Watch(w.repos, handler.OnSpecOrMetadataChange(handler.EnqueueMapped(c, w.pullRequestsOf))),
	)
}

func (w *wiring) pullRequestsOf(repo metav1.Object) []string {
	list, _ := w.m.SluiceInformers.Promoter().V1alpha1().PullRequests().Lister().PullRequests(repo.GetNamespace()).List(labels.Everything())
	var keys []string
	for _, pr := range list {
		if pr.Spec.RepositoryRef.Name == repo.GetName() {
			keys = append(keys, pr.Namespace+"/"+pr.Name)
		}
	}
	return keys
}
