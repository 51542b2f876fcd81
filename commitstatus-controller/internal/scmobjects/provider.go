package scmobjects

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// ProviderChecker judges an ScmProvider's spec and credentials; *resolve.Resolver is one, so a
// provider is Ready exactly when CommitStatuses can be sent through it.
type ProviderChecker interface {
	CheckProvider(ctx context.Context, p *scmv1alpha1.ScmProvider) *resolve.Error
}

// ProviderReconciler writes the status of one ScmProvider at a time.
type ProviderReconciler struct {
	Providers scmlisters.ScmProviderLister
	Client    sluice.Interface
	Checker   ProviderChecker
	Recorder  record.EventRecorder
	Log       *slog.Logger
	// Selector limits the objects written to those of this shard; nil means all.
	Selector labels.Selector
	// SecretsWatched is true when a Secret event brings back the ScmProviders that name the
	// Secret; otherwise one stalled on a Secret is looked at again every RecheckInterval.
	SecretsWatched bool
	// RecheckInterval: see DefaultRecheckInterval.
	RecheckInterval time.Duration
}

// Reconcile checks the ScmProvider named by key ("namespace/name") and records the verdict.
func (r *ProviderReconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, controller.Permanent(err)
	}
	p, err := r.Providers.ScmProviders(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if !owns(r.Selector, p) {
		return controller.Result{}, nil
	}

	next := p.DeepCopy()
	gen := p.Generation
	next.Status.ObservedGeneration = gen
	s := suspend.Get(p, p.Spec.Suspend)
	suspend.Report(&next.Status.Conditions, gen, s)
	if s.Suspended {
		return controller.Result{}, r.write(ctx, p, next)
	}
	v := r.check(ctx, p)
	v.apply(&next.Status.Conditions, gen)
	if err := r.write(ctx, p, next); err != nil {
		return controller.Result{}, errors.Join(v.err, err)
	}
	return v.result(recheckOr(r.RecheckInterval))
}

// check judges the spec and the Secret through the resolver. Calling the SCM would also prove the
// token is accepted, but a call per check spends the API quota that commit statuses need; a
// refused token shows on the first CommitStatus sent instead.
func (r *ProviderReconciler) check(ctx context.Context, p *scmv1alpha1.ScmProvider) verdict {
	rerr := r.Checker.CheckProvider(ctx, p)
	if rerr == nil {
		return ready(providerReadyMessage(p))
	}
	if rerr.Transient {
		return verdict{state: stateNotReady, reason: rerr.Reason, message: rerr.Message + "; retrying with backoff", err: rerr}
	}
	v := stalled(rerr.Reason, rerr.Message)
	v.recheck = r.needsRecheck(p, rerr)
	return v
}

// needsRecheck reports whether the fix of rerr would go unnoticed without a timer: a Secret event
// brings the ScmProvider back only when Secrets are watched, and nothing signals a ConfigMap CA
// bundle or a change of RBAC.
func (r *ProviderReconciler) needsRecheck(p *scmv1alpha1.ScmProvider, rerr *resolve.Error) bool {
	if !rerr.Unwatched {
		return false
	}
	if !r.SecretsWatched || rerr.Reason == resolve.ReasonSecretForbidden {
		return true
	}
	return p.Spec.CABundle != nil && p.Spec.CABundle.Kind == "ConfigMap"
}

func providerReadyMessage(p *scmv1alpha1.ScmProvider) string {
	if p.Spec.Type == scmv1alpha1.ScmProviderGit {
		return "type git has no SCM API: commit statuses stay in the cluster, and there are no credentials to check"
	}
	where := "its default URL"
	if p.Spec.BaseURL != "" {
		where = p.Spec.BaseURL
	}
	secret := ""
	if p.Spec.SecretRef != nil {
		secret = fmt.Sprintf(" and Secret %q has the keys it needs", p.Spec.SecretRef.Name)
	}
	return fmt.Sprintf("type %s at %s is usable%s; the SCM is not called to check, so the token is first tried by a CommitStatus",
		p.Spec.Type, where, secret)
}

func (r *ProviderReconciler) write(ctx context.Context, before, after *scmv1alpha1.ScmProvider) error {
	if equality.Semantic.DeepEqual(before.Status, after.Status) {
		return nil
	}
	written, err := r.Client.ScmV1alpha1().ScmProviders(after.Namespace).
		UpdateStatus(ctx, after, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return fmt.Errorf("writing the status of ScmProvider %s/%s: %w", after.Namespace, after.Name, err)
	}
	announce(r.Recorder, written, before.Status.Conditions, written.Status.Conditions)
	logChange(r.Log, "ScmProvider", written, before.Status.Conditions, written.Status.Conditions)
	return nil
}

func recheckOr(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return DefaultRecheckInterval
}
