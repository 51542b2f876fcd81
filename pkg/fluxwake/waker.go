package fluxwake

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/sluicehq/sluice/pkg/runtime/crdwatch"
)

// byBranch indexes GitRepositories by the repository and branch they follow.
const byBranch = "fluxwake.repositoryBranch"

// maxRetries bounds the attempts of one wake: past them Flux's own interval fetches the branch.
const maxRetries = 5

// branch is one merged-into branch to wake the sources of.
type branch struct{ repository, name string }

func (b branch) indexKey() string { return b.repository + "#" + b.name }

// Waker sets requestedAt on the GitRepositories that follow a branch Sluice merged into. It reads
// them from an informer that starts once the GitRepository CRD is installed (crdwatch.Kinds), so a
// cluster without Flux only logs, once, that merges wake nothing. Wakes run on its own worker, so
// a reconcile that merged never waits on Flux's objects.
type Waker struct {
	client   dynamic.Interface
	kinds    *crdwatch.Kinds
	informer cache.SharedIndexInformer
	queue    workqueue.TypedRateLimitingInterface[branch]
	log      *slog.Logger
	clock    clock.PassiveClock
	// fieldManager names the controller on the annotation it sets, in the GitRepository's
	// managedFields: who asked for the fetch.
	fieldManager string
}

// New reads GitRepositories in every namespace (Flux keeps them in flux-system, away from the
// applications' namespaces) through client, and CRD metadata through crds. fieldManager is the
// controller's name, recorded on the annotations it sets.
func New(client dynamic.Interface, crds metadata.Interface, fieldManager string, log *slog.Logger) (*Waker, error) {
	kinds, err := crdwatch.NewKinds(crds)
	if err != nil {
		return nil, err
	}
	informer := dynamicinformer.NewFilteredDynamicInformer(client, GitRepositories, metav1.NamespaceAll, 0,
		cache.Indexers{byBranch: indexByBranch}, nil).Informer()
	kinds.Add(GitRepositories.GroupResource(), informer)
	kinds.Log(log, func([]schema.GroupResource) string {
		return fmt.Sprintf("the CRD %s (Flux's source-controller) is not installed: merges do not ask Flux to fetch, and Flux fetches at its interval; it is picked up once installed", GitRepositories.GroupResource())
	})
	return &Waker{
		client: client, kinds: kinds, informer: informer, log: log, clock: clock.RealClock{}, fieldManager: fieldManager,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[branch](),
			workqueue.TypedRateLimitingQueueConfig[branch]{Name: "fluxwake"}),
	}, nil
}

func indexByBranch(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	s := SourceOf(u)
	if s.Repository == "" || s.Branch == "" || s.Pinned {
		return nil, nil // a fetch would not move it
	}
	return []string{branch{s.Repository, s.Branch}.indexKey()}, nil
}

// Request asks the sources that follow branchName of the repository at repoURL to fetch. It
// returns at once; requests for the same branch made before the worker gets to it are one wake.
func (w *Waker) Request(repoURL, branchName string) {
	key := RepositoryKey(repoURL)
	if w == nil || key == "" || branchName == "" {
		return
	}
	w.queue.Add(branch{key, branchName})
}

// Run watches the GitRepository CRD and its objects, and wakes sources until ctx ends. Add it
// with manager.AddServer: a standby replica keeps its cache warm, and a Request comes only from
// the leader's reconcilers.
func (w *Waker) Run(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
	}()
	go w.work(ctx)
	return w.kinds.Run(ctx)
}

func (w *Waker) work(ctx context.Context) {
	for {
		b, quit := w.queue.Get()
		if quit {
			return
		}
		err := w.wake(ctx, b)
		switch {
		case err == nil:
			w.queue.Forget(b)
		case w.queue.NumRequeues(b) < maxRetries:
			w.queue.AddRateLimited(b)
		default:
			w.log.Warn("cannot ask the Flux sources of a branch to fetch; they fetch at their interval", "repository", b.repository, "branch", b.name, "error", err)
			w.queue.Forget(b)
		}
		w.queue.Done(b)
	}
}

// wake sets requestedAt on every source that follows b. One time is used for them all.
func (w *Waker) wake(ctx context.Context, b branch) error {
	if !w.kinds.Synced(GitRepositories.GroupResource()) {
		return nil
	}
	objs, err := w.informer.GetIndexer().ByIndex(byBranch, b.indexKey())
	if err != nil {
		return err
	}
	patch := requestPatch(w.clock.Now())
	var failed error
	for _, obj := range objs {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := w.client.Resource(GitRepositories).Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: w.fieldManager})
		cancel()
		switch {
		case err == nil:
			w.log.Debug("asked a Flux source to fetch", "gitrepository", u.GetNamespace()+"/"+u.GetName(), "branch", b.name)
		case apierrors.IsNotFound(err):
		case apierrors.IsForbidden(err):
			w.log.Warn("not allowed to ask a Flux source to fetch: grant patch on gitrepositories.source.toolkit.fluxcd.io; it fetches at its interval",
				"gitrepository", u.GetNamespace()+"/"+u.GetName())
		default:
			failed = fmt.Errorf("GitRepository %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
	}
	return failed
}

// requestPatch is the merge patch that sets requestedAt to now, as the flux CLI writes it.
func requestPatch(now time.Time) []byte {
	return fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, RequestedAtAnnotation, now.Format(time.RFC3339Nano))
}

// HasSynced reports whether the CRDs were listed and, when Flux's is installed, its
// GitRepositories read. Controllers do not make readiness wait for it (see their wiring).
func (w *Waker) HasSynced() bool { return w.kinds.HasSynced() }
