// Package healthcheck reconciles HealthChecks: it computes the health of their targets from
// watch caches, writes it to status, and publishes it as a CommitStatus when asked to.
//
// One reconcile has three steps, as promoter-controller/internal/promotionstrategy does:
//
//   - observe (observe.go) starts the watches the HealthCheck needs (watches.go), expands its
//     Kustomizations and Applications (inventory.go), evaluates its targets and reads its revision
//     and CommitStatus (evaluate.go) into an observation;
//   - decide (decide.go) is a pure function of that observation: the verdict (verdict.go), the
//     status and conditions, and the CommitStatus to create, update or delete (publish.go);
//   - apply (apply.go) writes the CommitStatus, then the status, and once the status landed makes
//     the Events and metrics.
package healthcheck

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	healthlisters "github.com/sluicehq/sluice/api/generated/listers/health/v1alpha1"
	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/health-controller/internal/userlib"
	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/health/cel"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/dynamicwatch"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
)

// FieldManager writes HealthCheck status and CommitStatus objects.
const FieldManager = "health-controller"

// Additional states reported by the state metric, besides the verdict states.
const (
	stateWaiting   = healthv1alpha1.ReasonWaitingForWatches
	stateStalled   = "Stalled"
	stateSuspended = "Suspended"
)

// Watches are the dynamic watches the reconciler reads targets from: a *dynamicwatch.Watcher,
// or a fake in unit tests.
type Watches interface {
	Reader
	// StateFor is State for one owner: synced once the cache keeps what owner reads.
	StateFor(owner string, s dynamicwatch.Scope) (synced bool, err error)
	AddNeeds(owner string, needs ...dynamicwatch.Need)
	SetNeeds(owner string, needs ...dynamicwatch.Need)
	Owned(owner string) []dynamicwatch.Scope
	Release(owner string)
	Stats() []dynamicwatch.ScopeStats
}

// maxEventMessage bounds the message of an Event.
const maxEventMessage = 1024

// DefaultTimeout is how long targets may stay unhealthy when spec.timeout is not set; the CRD
// defaults the field to the same value.
const DefaultTimeout = 5 * time.Minute

// Reconciler computes the health of one HealthCheck per call.
type Reconciler struct {
	Lister   healthlisters.HealthCheckLister
	Client   sluice.Interface
	Watcher  Watches
	Mapper   Mapper
	Compiler *cel.Compiler
	Builtin  *health.Layer
	Library  *userlib.Library
	Recorder record.EventRecorder
	Metrics  *Metrics
	Log      *slog.Logger
	// AllowCrossNamespaceRefs lets targets and sources live in other namespaces than the
	// HealthCheck.
	AllowCrossNamespaceRefs bool
	// Access answers whether a HealthCheck's ServiceAccount may read a target.
	Access Authorizer
	// DefaultServiceAccount is the ServiceAccount of a HealthCheck that names none
	// (--default-service-account). Empty lets such a HealthCheck read with the controller's
	// own rights.
	DefaultServiceAccount string
	// Clock is the time; the manager's in a process, a fake one in tests.
	Clock clock.PassiveClock

	index        *index
	undiscovered sync.Map // keys of HealthChecks that name a kind the server does not serve
}

// New returns a Reconciler; set the exported fields before the first Reconcile.
func New() *Reconciler { return &Reconciler{index: newIndex()} }

// Owners returns the keys of the HealthChecks that read the object of an event on a watched
// scope, before or after it: the keys to enqueue.
func (r *Reconciler) Owners(s dynamicwatch.Scope, old, new *unstructured.Unstructured) []string {
	return r.index.owners(s, old, new)
}

// Reconcile computes and records the health of the HealthCheck named by key: observe reads the
// check, its targets and its CommitStatus; decide, which reads and writes nothing, makes the
// verdict, the status and the CommitStatus of them; apply writes them, then makes the Events and
// metrics of what was written.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	l, found, err := reconcile.Load(key, r.get, func(hc *healthv1alpha1.HealthCheck) bool { return hc.Spec.Suspend })
	if err != nil {
		return controller.Result{}, err
	}
	if !found {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		r.forget(key, ns, name)
		return controller.Result{}, nil
	}
	o, err := r.observe(ctx, key, l)
	if err != nil {
		return controller.Result{}, err
	}
	return r.apply(ctx, o, decide(o))
}

func (r *Reconciler) get(ns, name string) (*healthv1alpha1.HealthCheck, error) {
	return r.Lister.HealthChecks(ns).Get(name)
}

func (r *Reconciler) release(key string) {
	r.Watcher.Release(key)
	r.index.remove(key)
	r.undiscovered.Delete(key)
}

func (r *Reconciler) forget(key, namespace, name string) {
	r.release(key)
	r.Metrics.forget(namespace, name)
}

// Undiscovered returns the keys of HealthChecks waiting for a kind to be served.
func (r *Reconciler) Undiscovered() []string {
	var keys []string
	r.undiscovered.Range(func(k, _ any) bool {
		keys = append(keys, k.(string))
		return true
	})
	return keys
}
