package readiness

import (
	"context"
	"errors"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
)

// Options are the settings both reconcilers share.
type Options struct {
	Client   sluice.Interface
	Recorder record.EventRecorder
	Log      *slog.Logger
	// Selector limits the objects written to those of this shard; nil means all. With
	// --watch-label-selector, shards split ScmProviders and ScmRepositories by label as they split
	// CommitStatuses, so each object has one writer, though every shard reads them all.
	Selector labels.Selector
	// SecretsWatched is true when a Secret event brings back the objects that name the Secret;
	// otherwise one stalled on a Secret is looked at again every RecheckInterval.
	SecretsWatched bool
	// RecheckInterval: see DefaultRecheckInterval.
	RecheckInterval time.Duration
}

// Object is an ScmProvider or an ScmRepository, through a pointer.
type Object[T any] interface {
	reconcile.Object[T]
	runtime.Object
}

// Kind describes one kind to Reconcile.
type Kind[T Object[T], S any] struct {
	// Name is the kind's name, for logs.
	Name   string
	Status reconcile.StatusWriter[T, S]
	// Client returns the typed client of a namespace.
	Client      func(c sluice.Interface, namespace string) reconcile.StatusClient[T]
	SpecSuspend func(T) bool
	// Observed points to status.observedGeneration and status.conditions.
	Observed func(T) (*int64, *[]metav1.Condition)
}

// Reconcile loads the object key names and, unless another shard owns it or it is gone, reports
// its suspension or judges it with check, and writes the verdict into its status: observe and
// decide are check's, apply is the status write.
func Reconcile[T Object[T], S any](ctx context.Context, key string, kind Kind[T, S], opts Options,
	get func(namespace, name string) (T, error), check func(context.Context, T) Verdict) (controller.Result, error) {
	l, found, err := reconcile.Load(key, get, kind.SpecSuspend)
	if !found || !owns(opts.Selector, l.Cached) {
		return controller.Result{}, err
	}
	gen := l.Cached.GetGeneration()
	observed, conds := kind.Observed(l.Next)
	*observed = gen
	if l.ReportSuspend(conds) {
		return controller.Result{}, write(ctx, kind, opts, l.Cached, l.Next)
	}
	v := check(ctx, l.Cached)
	v.Apply(conds, gen)
	if err := write(ctx, kind, opts, l.Cached, l.Next); err != nil {
		return controller.Result{}, errors.Join(v.Err, err)
	}
	return v.Result(opts.RecheckInterval)
}

func write[T Object[T], S any](ctx context.Context, kind Kind[T, S], opts Options, before, after T) error {
	written, wrote, err := kind.Status.Write(ctx, kind.Client(opts.Client, after.GetNamespace()), before, after)
	if wrote {
		_, was := kind.Observed(before)
		_, is := kind.Observed(written)
		announce(opts.Recorder, written, *was, *is)
		logChange(opts.Log, kind.Name, written, *was, *is)
	}
	return err
}

func owns(selector labels.Selector, obj metav1.Object) bool {
	return selector == nil || selector.Matches(labels.Set(obj.GetLabels()))
}

// announce emits an Event when readiness or suspension changed; never for a reconcile that
// changed nothing.
func announce(recorder record.EventRecorder, obj runtime.Object, before, after []metav1.Condition) {
	if recorder == nil {
		return
	}
	if s := conditions.Get(after, conditions.Suspended); s != nil && !sameCondition(s, conditions.Get(before, conditions.Suspended)) {
		recorder.Event(obj, corev1.EventTypeNormal, s.Reason, s.Message)
	}
	r := conditions.Get(after, conditions.Ready)
	if r == nil || sameCondition(r, conditions.Get(before, conditions.Ready)) {
		return
	}
	eventType := corev1.EventTypeNormal
	if r.Status != metav1.ConditionTrue && !conditions.IsTrue(after, conditions.Reconciling) {
		eventType = corev1.EventTypeWarning
	}
	recorder.Event(obj, eventType, r.Reason, r.Message)
}

// logChange logs a change of readiness; messages name objects and keys, never a value.
func logChange(log *slog.Logger, kind string, obj metav1.Object, before, after []metav1.Condition) {
	r := conditions.Get(after, conditions.Ready)
	if log == nil || r == nil || sameCondition(r, conditions.Get(before, conditions.Ready)) {
		return
	}
	log.Info(kind+" changed state", "key", obj.GetNamespace()+"/"+obj.GetName(),
		"ready", r.Status, "reason", r.Reason, "message", r.Message)
}

func sameCondition(a, b *metav1.Condition) bool {
	return a != nil && b != nil && a.Status == b.Status && a.Reason == b.Reason
}
