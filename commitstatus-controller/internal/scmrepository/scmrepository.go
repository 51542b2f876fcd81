// Package scmrepository reconciles ScmRepositories: Ready when the url, the ScmProvider and the
// auth Secret they name are usable. The git server is not contacted: the first fetch or push
// tries the credentials.
package scmrepository

import (
	"context"
	"fmt"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/readiness"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/gitauth"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// Condition reasons of ScmRepositories, besides those of resolve (a missing ScmProvider or
// Secret, an incomplete Secret) and suspend.
const (
	// ReasonInvalidURL: the url breaks the API's rules.
	ReasonInvalidURL = "InvalidURL"
	// ReasonAuthDoesNotMatchURL: ssh auth with an https URL, or token/basic auth with an ssh URL.
	ReasonAuthDoesNotMatchURL = "AuthDoesNotMatchURL"
	// ReasonProviderNotReady: the ScmProvider is not Ready.
	ReasonProviderNotReady = "ScmProviderNotReady"
	// ReasonWaitingForProvider: the ScmProvider has not been checked at its current generation yet.
	ReasonWaitingForProvider = "WaitingForScmProvider"
)

// Reconciler writes the status of one ScmRepository at a time.
type Reconciler struct {
	readiness.Options
	Repositories scmlisters.ScmRepositoryLister
	Providers    scmlisters.ScmProviderLister
	// Kube reads the auth Secret, with get only.
	Kube kubernetes.Interface
}

var kind = readiness.Kind[*scmv1alpha1.ScmRepository, scmv1alpha1.ScmRepositoryStatus]{
	Name: "ScmRepository",
	Status: reconcile.StatusWriter[*scmv1alpha1.ScmRepository, scmv1alpha1.ScmRepositoryStatus]{
		Kind: "ScmRepository", FieldManager: readiness.FieldManager,
		Status: func(r *scmv1alpha1.ScmRepository) *scmv1alpha1.ScmRepositoryStatus { return &r.Status },
	},
	Client: func(c sluice.Interface, ns string) reconcile.StatusClient[*scmv1alpha1.ScmRepository] {
		return c.ScmV1alpha1().ScmRepositories(ns)
	},
	SpecSuspend: func(r *scmv1alpha1.ScmRepository) bool { return r.Spec.Suspend },
	Observed: func(r *scmv1alpha1.ScmRepository) (*int64, *[]metav1.Condition) {
		return &r.Status.ObservedGeneration, &r.Status.Conditions
	},
}

// Reconcile checks the ScmRepository named by key ("namespace/name") and records the verdict.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	return readiness.Reconcile(ctx, key, kind, r.Options, r.get, r.check)
}

func (r *Reconciler) get(namespace, name string) (*scmv1alpha1.ScmRepository, error) {
	return r.Repositories.ScmRepositories(namespace).Get(name)
}

// check judges the spec, the ScmProvider and the auth Secret, in that order, and reports the
// first problem. The git server is not contacted: the first fetch or push tries the credentials.
func (r *Reconciler) check(ctx context.Context, repo *scmv1alpha1.ScmRepository) readiness.Verdict {
	sshURL, err := checkRepositoryURL(repo.Spec.URL, repo.Spec.AllowInsecureLoopbackHTTP)
	if err != nil {
		return readiness.Stalled(ReasonInvalidURL, err.Error())
	}
	if auth := repo.Spec.Auth; auth != nil && (auth.Type == scmv1alpha1.GitAuthSSH) != sshURL {
		return readiness.Stalled(ReasonAuthDoesNotMatchURL, fmt.Sprintf(
			"auth.type %s does not fit the url: ssh auth needs an ssh://… or user@host:path url, token and basic auth need https://",
			auth.Type))
	}
	if v, ok := r.checkProvider(repo); !ok {
		return v
	}
	if v, ok := r.checkAuthSecret(ctx, repo); !ok {
		return v
	}
	return readiness.Ready(readyMessage(repo))
}

// checkProvider reads the ScmProvider's own verdict, so a provider is judged in one place and
// its Secret is not read again for every repository.
func (r *Reconciler) checkProvider(repo *scmv1alpha1.ScmRepository) (readiness.Verdict, bool) {
	name := repo.Spec.ProviderRef.Name
	p, err := r.Providers.ScmProviders(repo.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return readiness.Stalled(resolve.ReasonProviderNotFound, fmt.Sprintf(
			"ScmProvider %q does not exist in namespace %q: create it, or fix spec.providerRef.name", name, repo.Namespace)), false
	}
	if err != nil {
		return readiness.Verdict{State: readiness.StateNotReady, Reason: resolve.ReasonLookupFailed,
			Message: fmt.Sprintf("reading ScmProvider %q: %v; retrying with backoff", name, err), Err: err}, false
	}
	if s := suspend.Get(p, p.Spec.Suspend); s.Suspended {
		return readiness.Verdict{State: readiness.StateNotReady, Reason: resolve.ReasonProviderSuspended, Message: fmt.Sprintf(
			"ScmProvider %q is suspended (%s); this repository is checked again when it is resumed", name, s.Message)}, false
	}
	pr := conditions.Get(p.Status.Conditions, conditions.Ready)
	if pr == nil || pr.ObservedGeneration != p.Generation {
		return readiness.Verdict{State: readiness.StateWaiting, Reason: ReasonWaitingForProvider, Message: fmt.Sprintf(
			"ScmProvider %q has not been checked at its current generation yet", name)}, false
	}
	if pr.Status != metav1.ConditionTrue {
		return readiness.Stalled(ReasonProviderNotReady, fmt.Sprintf("ScmProvider %q is not ready (%s): %s", name, pr.Reason, pr.Message)), false
	}
	return readiness.Verdict{}, true
}

// checkAuthSecret reads the Secret named by spec.auth and checks it has the keys its type needs,
// with the same rules git uses when it reads them. Values are never put into a message.
func (r *Reconciler) checkAuthSecret(ctx context.Context, repo *scmv1alpha1.ScmRepository) (readiness.Verdict, bool) {
	auth := repo.Spec.Auth
	if auth == nil {
		return readiness.Verdict{}, true
	}
	name := auth.SecretRef.Name
	secret, err := r.Kube.CoreV1().Secrets(repo.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		v := readiness.Stalled(resolve.ReasonSecretNotFound, fmt.Sprintf(
			"Secret %q, named by spec.auth.secretRef, does not exist in namespace %q: create it with the keys %s auth needs (%s), or fix spec.auth.secretRef.name",
			name, repo.Namespace, auth.Type, authKeys(auth.Type)))
		v.Recheck = !r.SecretsWatched
		return v, false
	case apierrors.IsForbidden(err):
		v := readiness.Stalled(resolve.ReasonSecretForbidden, fmt.Sprintf(
			"the controller may not read Secret %q in namespace %q, named by spec.auth.secretRef: allow it with the chart's "+
				"secretAccess values (namespaces, resourceNames)", name, repo.Namespace))
		v.Recheck = true
		return v, false
	case err != nil:
		return readiness.Verdict{State: readiness.StateNotReady, Reason: resolve.ReasonLookupFailed,
			Message: fmt.Sprintf("reading Secret %q: %v; retrying with backoff", name, err), Err: err}, false
	}
	if _, err := gitauth.FromSecret(auth.Type, secret.Data); err != nil {
		// FromSecret names missing keys and unknown types, never a value.
		v := readiness.Stalled(resolve.ReasonSecretInvalid, fmt.Sprintf("Secret %q, named by spec.auth.secretRef: %v", name, err))
		v.Recheck = !r.SecretsWatched
		return v, false
	}
	return readiness.Verdict{}, true
}

// authKeys lists the Secret keys an auth type needs, for messages about a missing Secret.
func authKeys(t scmv1alpha1.GitAuthType) string {
	switch t {
	case scmv1alpha1.GitAuthToken:
		return scmv1alpha1.GitSecretKeyToken + ", optionally " + scmv1alpha1.GitSecretKeyUsername
	case scmv1alpha1.GitAuthBasic:
		return scmv1alpha1.GitSecretKeyUsername + " and " + scmv1alpha1.GitSecretKeyPassword
	case scmv1alpha1.GitAuthSSH:
		return scmv1alpha1.GitSecretKeyIdentity + " and " + scmv1alpha1.GitSecretKeyKnownHosts + ", optionally " + scmv1alpha1.GitSecretKeyPassphrase
	}
	return "see the ScmRepository API"
}

func readyMessage(repo *scmv1alpha1.ScmRepository) string {
	creds := "no credentials (a public repository)"
	if a := repo.Spec.Auth; a != nil {
		creds = fmt.Sprintf("%s auth from Secret %q", a.Type, a.SecretRef.Name)
	}
	return fmt.Sprintf("url, ScmProvider %q and %s are usable; the git server is not contacted to check",
		repo.Spec.ProviderRef.Name, creds)
}

// ProviderVerdictChanged reports whether what an ScmRepository reads from its ScmProvider changed:
// the spec, the annotations (suspend), or the Ready condition.
func ProviderVerdictChanged(before, after *scmv1alpha1.ScmProvider) bool {
	if before.Generation != after.Generation || !maps.Equal(before.Annotations, after.Annotations) {
		return true
	}
	a, b := conditions.Get(before.Status.Conditions, conditions.Ready), conditions.Get(after.Status.Conditions, conditions.Ready)
	if a == nil || b == nil {
		return a != b
	}
	return a.Status != b.Status || a.Reason != b.Reason || a.Message != b.Message || a.ObservedGeneration != b.ObservedGeneration
}
