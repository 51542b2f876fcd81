// Package scmimport imports what the SCM holds about the commits a PromotionStrategy tracks (its
// environments' proposed and active hydrated commits) as CommitStatus objects, so a promotion can
// wait for a CI check that runs on the SCM, or for a health verdict another cluster published
// there. This is how clusters of a fleet gate each other without any of them holding another's
// kubeconfig: a workload cluster's commitstatus-controller mirrors its health to the SCM, and the
// management cluster's imports it.
//
// Imported objects carry the label commitstatus.sluice.dev/imported=true and the key
// KeyForName(context), are owned by the PromotionStrategy, and are never mirrored back (the
// commitstatus reconciler skips them). Statuses that a CommitStatus of this cluster mirrors are
// not imported again.
//
// SCM reads go through the same provider client, and so the same shared rate limiter, as the
// statuses this controller writes: one budget per ScmProvider.
package scmimport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	commitstatuslisters "github.com/sluicehq/sluice/api/generated/listers/commitstatus/v1alpha1"
	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/pkg/scm"
)

// FieldManager writes imported CommitStatuses.
const FieldManager = "commitstatus-controller-import"

// DefaultPollInterval is how often the statuses of a strategy's commits are read again when no
// webhook says they changed.
const DefaultPollInterval = 2 * time.Minute

// Event reasons, on the PromotionStrategy.
const (
	ReasonImportFailed = "ImportFailed"
)

// Reconciler imports the SCM statuses of one PromotionStrategy's commits at a time.
type Reconciler struct {
	Strategies promoterlisters.PromotionStrategyLister
	Statuses   commitstatuslisters.CommitStatusLister
	Client     sluice.Interface
	Resolver   *resolve.Resolver
	Recorder   record.EventRecorder
	Metrics    *Metrics
	Log        *slog.Logger
	// PollInterval: see DefaultPollInterval.
	PollInterval time.Duration
	// CallTimeout bounds one SCM read, waits for the shared rate limiter included.
	CallTimeout time.Duration
	// ShardKeys are the label keys --watch-label-selector names. This process sees only the
	// strategies its selector matches, and only the CommitStatuses it matches: an imported object
	// carries its strategy's values of these keys, so it is in the cache of the shard that
	// imports it (and of no other).
	ShardKeys []string
}

func (r *Reconciler) poll() time.Duration {
	if r.PollInterval > 0 {
		return r.PollInterval
	}
	return DefaultPollInterval
}

// Reconcile imports the statuses of the strategy key ("namespace/name").
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	l, found, err := reconcile.Load(key, func(ns, name string) (*promoterv1alpha1.PromotionStrategy, error) {
		return r.Strategies.PromotionStrategies(ns).Get(name)
	}, func(ps *promoterv1alpha1.PromotionStrategy) bool { return ps.Spec.Suspend })
	if !found {
		// Imported objects of a deleted strategy go with it: the garbage collector follows owners.
		return controller.Result{}, err
	}
	ps := l.Cached
	if l.Suspend.Suspended {
		// A suspended strategy promotes nothing, so its checks need no reads.
		return controller.Result{}, nil
	}
	o, readErr := r.observe(ctx, ps)
	if o == nil {
		return r.failed(ps, readErr)
	}
	plan := Decide(*o)
	if err := r.apply(ctx, plan); err != nil {
		return controller.Result{}, err
	}
	r.Metrics.count(plan)
	if readErr != nil {
		return r.failed(ps, readErr)
	}
	return controller.Result{RequeueAfter: r.poll()}, nil
}

// observe reads the strategy's commits' statuses from the SCM, then what the cluster holds. It
// returns nil when nothing can be decided; with a partial read, both the Observed (commits whose
// read failed are absent from Read) and the error. The cluster is read last: a status this
// cluster mirrored while the SCM was read is then in the cache, recognised as this cluster's own,
// and not imported back as someone else's.
func (r *Reconciler) observe(ctx context.Context, ps *promoterv1alpha1.PromotionStrategy) (*Observed, error) {
	o := &Observed{
		Namespace: ps.Namespace, Strategy: ps.Name, UID: ps.UID, Repository: ps.Spec.RepositoryRef.Name,
		SHAs: TrackedSHAs(ps), Read: map[string][]scm.ReadStatus{}, Local: map[[2]string]bool{},
		ShardLabels: ShardLabels(ps.Labels, r.ShardKeys),
	}
	decidable, readErr := r.readSCM(ctx, o)
	if !decidable {
		return nil, readErr
	}
	all, err := r.Statuses.CommitStatuses(ps.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, cs := range all {
		switch {
		case metav1.IsControlledBy(cs, ps) || ownedBy(cs, ps):
			if cs.Labels[commitstatusv1alpha1.ImportedLabel] == "true" {
				o.Existing = append(o.Existing, cs)
			}
		case cs.Labels[commitstatusv1alpha1.ImportedLabel] != "true" && cs.Spec.RepositoryRef.Name == o.Repository:
			o.Local[[2]string{cs.Spec.SHA, cs.Spec.Name}] = true
		}
	}
	return o, readErr
}

// readSCM fills o.Read with the statuses of each tracked commit the SCM answered for. It is not
// decidable when the repository cannot be read at all.
func (r *Reconciler) readSCM(ctx context.Context, o *Observed) (bool, error) {
	if len(o.SHAs) == 0 {
		return true, nil
	}
	target, rerr := r.Resolver.ResolveRepository(ctx, o.Namespace, o.Repository)
	if rerr != nil {
		return false, rerr
	}
	if target.Suspended != nil {
		return false, fmt.Errorf("%s", target.Suspended.Message)
	}
	reader, ok := target.Provider.(scm.StatusReader)
	if !ok || target.InCluster {
		// Plain git has no SCM statuses: every status is a CommitStatus of this cluster already.
		return true, nil
	}
	var errs []error
	for _, sha := range o.SHAs {
		statuses, err := r.read(ctx, reader, target, sha)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		o.Read[sha] = statuses
	}
	return true, errors.Join(errs...)
}

func (r *Reconciler) read(ctx context.Context, reader scm.StatusReader, target *resolve.Target, sha string) ([]scm.ReadStatus, error) {
	if r.CallTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.CallTimeout)
		defer cancel()
	}
	r.Metrics.read()
	statuses, err := reader.ListCommitStatuses(ctx, target.Repository, sha)
	if err != nil {
		return nil, fmt.Errorf("ScmProvider %q: %w", target.ProviderKey, err)
	}
	return statuses, nil
}

// create creates an imported object. One that exists already but is not in this shard's cache
// was imported for the same strategy under another shard label (the strategy moved shards): it
// is read live and relabelled, so this shard takes it over. One owned by anything else is left.
func (r *Reconciler) create(ctx context.Context, cs *commitstatusv1alpha1.CommitStatus) error {
	client := r.Client.CommitstatusV1alpha1().CommitStatuses(cs.Namespace)
	_, err := client.Create(ctx, cs, metav1.CreateOptions{FieldManager: FieldManager})
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("create imported CommitStatus %s/%s: %w", cs.Namespace, cs.Name, err)
		}
		return nil
	}
	live, err := client.Get(ctx, cs.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read imported CommitStatus %s/%s: %w", cs.Namespace, cs.Name, err)
	}
	if live.Labels[commitstatusv1alpha1.ImportedLabel] != "true" || len(live.OwnerReferences) != 1 ||
		live.OwnerReferences[0].UID != cs.OwnerReferences[0].UID || !changed(live, cs) {
		return nil
	}
	next := live.DeepCopy()
	next.Labels, next.Annotations, next.Spec, next.OwnerReferences = cs.Labels, cs.Annotations, cs.Spec, cs.OwnerReferences
	_, err = client.Update(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update imported CommitStatus %s/%s: %w", cs.Namespace, cs.Name, err)
	}
	return nil
}

func ownedBy(cs *commitstatusv1alpha1.CommitStatus, ps *promoterv1alpha1.PromotionStrategy) bool {
	for _, ref := range cs.OwnerReferences {
		if ref.UID == ps.UID {
			return true
		}
	}
	return false
}

// apply writes the plan. An object created or deleted meanwhile (by a racing reconcile after a
// restart) is not an error.
func (r *Reconciler) apply(ctx context.Context, plan Plan) error {
	var errs []error
	for _, cs := range plan.Create {
		if err := r.create(ctx, cs); err != nil {
			errs = append(errs, err)
		}
	}
	for _, cs := range plan.Update {
		_, err := r.Client.CommitstatusV1alpha1().CommitStatuses(cs.Namespace).Update(ctx, cs, metav1.UpdateOptions{FieldManager: FieldManager})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("update imported CommitStatus %s/%s: %w", cs.Namespace, cs.Name, err))
		}
	}
	for _, name := range plan.Delete {
		err := r.Client.CommitstatusV1alpha1().CommitStatuses(plan.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete imported CommitStatus %s/%s: %w", plan.Namespace, name, err))
		}
	}
	return errors.Join(errs...)
}

// failed reports a read that failed: an Event on the strategy saying what to fix, and a retry.
// Rate-limited reads wait for the SCM's reset; refusals that retrying cannot fix wait for the
// next poll, so a bad token does not turn into a stream of refused calls.
func (r *Reconciler) failed(ps *promoterv1alpha1.PromotionStrategy, err error) (controller.Result, error) {
	if r.Recorder != nil {
		r.Recorder.Eventf(ps, corev1.EventTypeWarning, ReasonImportFailed,
			"cannot import the SCM's commit statuses of %s: %v", ps.Spec.RepositoryRef.Name, err)
	}
	var rerr *resolve.Error
	switch {
	case scm.IsRateLimited(err):
		wait, ok := scm.RetryAfter(err)
		if !ok || wait <= 0 {
			wait = r.poll()
		}
		return controller.Result{RequeueAfter: wait}, nil
	case scm.IsPermanent(err), errors.As(err, &rerr) && !rerr.Transient:
		r.Log.Info("import stalled until the next poll", "promotionstrategy", ps.Namespace+"/"+ps.Name, "error", err)
		return controller.Result{RequeueAfter: r.poll()}, nil
	}
	return controller.Result{}, err
}
