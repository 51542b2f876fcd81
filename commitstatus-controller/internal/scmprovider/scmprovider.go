// Package scmprovider reconciles ScmProviders: Ready when the type, the base URL and the Secret
// and CA bundle they name are usable, exactly when CommitStatuses can be sent through them.
package scmprovider

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/readiness"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
)

// Checker judges an ScmProvider's spec and credentials; *resolve.Resolver is one, so a
// provider is Ready exactly when CommitStatuses can be sent through it.
type Checker interface {
	CheckProvider(ctx context.Context, p *scmv1alpha1.ScmProvider) *resolve.Error
}

// Reconciler writes the status of one ScmProvider at a time.
type Reconciler struct {
	readiness.Options
	Providers scmlisters.ScmProviderLister
	Checker   Checker
}

var kind = readiness.Kind[*scmv1alpha1.ScmProvider, scmv1alpha1.ScmProviderStatus]{
	Name: "ScmProvider",
	Status: reconcile.StatusWriter[*scmv1alpha1.ScmProvider, scmv1alpha1.ScmProviderStatus]{
		Kind: "ScmProvider", FieldManager: readiness.FieldManager,
		Status: func(p *scmv1alpha1.ScmProvider) *scmv1alpha1.ScmProviderStatus { return &p.Status },
	},
	Client: func(c sluice.Interface, ns string) reconcile.StatusClient[*scmv1alpha1.ScmProvider] {
		return c.ScmV1alpha1().ScmProviders(ns)
	},
	SpecSuspend: func(p *scmv1alpha1.ScmProvider) bool { return p.Spec.Suspend },
	Observed: func(p *scmv1alpha1.ScmProvider) (*int64, *[]metav1.Condition) {
		return &p.Status.ObservedGeneration, &p.Status.Conditions
	},
}

// Reconcile checks the ScmProvider named by key ("namespace/name") and records the verdict.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	return readiness.Reconcile(ctx, key, kind, r.Options, r.get, r.check)
}

func (r *Reconciler) get(namespace, name string) (*scmv1alpha1.ScmProvider, error) {
	return r.Providers.ScmProviders(namespace).Get(name)
}

// check judges the spec and the Secret through the resolver. Calling the SCM would also prove the
// token is accepted, but a call per check spends the API quota that commit statuses need; a
// refused token shows on the first CommitStatus sent instead.
func (r *Reconciler) check(ctx context.Context, p *scmv1alpha1.ScmProvider) readiness.Verdict {
	rerr := r.Checker.CheckProvider(ctx, p)
	if rerr == nil {
		return readiness.Ready(readyMessage(p))
	}
	if rerr.Transient {
		return readiness.Verdict{State: readiness.StateNotReady, Reason: rerr.Reason, Message: rerr.Message + "; retrying with backoff", Err: rerr}
	}
	v := readiness.Stalled(rerr.Reason, rerr.Message)
	v.Recheck = r.needsRecheck(p, rerr)
	return v
}

// needsRecheck reports whether the fix of rerr would go unnoticed without a timer: a Secret event
// brings the ScmProvider back only when Secrets are watched, and nothing signals a ConfigMap CA
// bundle or a change of RBAC.
func (r *Reconciler) needsRecheck(p *scmv1alpha1.ScmProvider, rerr *resolve.Error) bool {
	if !rerr.Unwatched {
		return false
	}
	if !r.SecretsWatched || rerr.Reason == resolve.ReasonSecretForbidden {
		return true
	}
	return p.Spec.CABundle != nil && p.Spec.CABundle.Kind == "ConfigMap"
}

func readyMessage(p *scmv1alpha1.ScmProvider) string {
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
