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
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// RepositoryReconciler writes the status of one ScmRepository at a time.
type RepositoryReconciler struct {
	Repositories scmlisters.ScmRepositoryLister
	Providers    scmlisters.ScmProviderLister
	// Kube reads the auth Secret, with get only.
	Kube     kubernetes.Interface
	Client   sluice.Interface
	Recorder record.EventRecorder
	Log      *slog.Logger
	// Selector limits the objects written to those of this shard; nil means all.
	Selector labels.Selector
	// SecretsWatched: see ProviderReconciler.SecretsWatched.
	SecretsWatched bool
	// RecheckInterval: see DefaultRecheckInterval.
	RecheckInterval time.Duration
}

// Reconcile checks the ScmRepository named by key ("namespace/name") and records the verdict.
func (r *RepositoryReconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, controller.Permanent(err)
	}
	repo, err := r.Repositories.ScmRepositories(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if !owns(r.Selector, repo) {
		return controller.Result{}, nil
	}

	next := repo.DeepCopy()
	gen := repo.Generation
	next.Status.ObservedGeneration = gen
	s := suspend.Get(repo, repo.Spec.Suspend)
	suspend.Report(&next.Status.Conditions, gen, s)
	if s.Suspended {
		return controller.Result{}, r.write(ctx, repo, next)
	}
	v := r.check(ctx, repo)
	v.apply(&next.Status.Conditions, gen)
	if err := r.write(ctx, repo, next); err != nil {
		return controller.Result{}, errors.Join(v.err, err)
	}
	return v.result(recheckOr(r.RecheckInterval))
}

// check judges the spec, the ScmProvider and the auth Secret, in that order, and reports the
// first problem. The git server is not contacted: the first fetch or push tries the credentials.
func (r *RepositoryReconciler) check(ctx context.Context, repo *scmv1alpha1.ScmRepository) verdict {
	sshURL, err := checkRepositoryURL(repo.Spec.URL, repo.Spec.AllowInsecureLoopbackHTTP)
	if err != nil {
		return stalled(ReasonInvalidURL, err.Error())
	}
	if auth := repo.Spec.Auth; auth != nil && (auth.Type == scmv1alpha1.GitAuthSSH) != sshURL {
		return stalled(ReasonAuthDoesNotMatchURL, fmt.Sprintf(
			"auth.type %s does not fit the url: ssh auth needs an ssh://… or user@host:path url, token and basic auth need https://",
			auth.Type))
	}
	if v, ok := r.checkProvider(repo); !ok {
		return v
	}
	if v, ok := r.checkAuthSecret(ctx, repo); !ok {
		return v
	}
	return ready(repositoryReadyMessage(repo))
}

// checkProvider reads the ScmProvider's own verdict, so a provider is judged in one place and
// its Secret is not read again for every repository.
func (r *RepositoryReconciler) checkProvider(repo *scmv1alpha1.ScmRepository) (verdict, bool) {
	name := repo.Spec.ProviderRef.Name
	p, err := r.Providers.ScmProviders(repo.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return stalled(resolve.ReasonProviderNotFound, fmt.Sprintf(
			"ScmProvider %q does not exist in namespace %q: create it, or fix spec.providerRef.name", name, repo.Namespace)), false
	}
	if err != nil {
		return verdict{state: stateNotReady, reason: resolve.ReasonLookupFailed,
			message: fmt.Sprintf("reading ScmProvider %q: %v; retrying with backoff", name, err), err: err}, false
	}
	if s := suspend.Get(p, p.Spec.Suspend); s.Suspended {
		return verdict{state: stateNotReady, reason: resolve.ReasonProviderSuspended, message: fmt.Sprintf(
			"ScmProvider %q is suspended (%s); this repository is checked again when it is resumed", name, s.Message)}, false
	}
	pr := conditions.Get(p.Status.Conditions, conditions.Ready)
	if pr == nil || pr.ObservedGeneration != p.Generation {
		return verdict{state: stateWaiting, reason: ReasonWaitingForProvider, message: fmt.Sprintf(
			"ScmProvider %q has not been checked at its current generation yet", name)}, false
	}
	if pr.Status != metav1.ConditionTrue {
		return stalled(ReasonProviderNotReady, fmt.Sprintf("ScmProvider %q is not ready (%s): %s", name, pr.Reason, pr.Message)), false
	}
	return verdict{}, true
}

// checkAuthSecret reads the Secret named by spec.auth and checks it has the keys its type needs,
// with the same rules git uses when it reads them. Values are never put into a message.
func (r *RepositoryReconciler) checkAuthSecret(ctx context.Context, repo *scmv1alpha1.ScmRepository) (verdict, bool) {
	auth := repo.Spec.Auth
	if auth == nil {
		return verdict{}, true
	}
	name := auth.SecretRef.Name
	secret, err := r.Kube.CoreV1().Secrets(repo.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		v := stalled(resolve.ReasonSecretNotFound, fmt.Sprintf(
			"Secret %q, named by spec.auth.secretRef, does not exist in namespace %q: create it with the keys %s auth needs (%s), or fix spec.auth.secretRef.name",
			name, repo.Namespace, auth.Type, authKeys(auth.Type)))
		v.recheck = !r.SecretsWatched
		return v, false
	case apierrors.IsForbidden(err):
		v := stalled(resolve.ReasonSecretForbidden, fmt.Sprintf(
			"the controller may not read Secret %q in namespace %q, named by spec.auth.secretRef: allow it with the chart's "+
				"secretAccess values (namespaces, resourceNames)", name, repo.Namespace))
		v.recheck = true
		return v, false
	case err != nil:
		return verdict{state: stateNotReady, reason: resolve.ReasonLookupFailed,
			message: fmt.Sprintf("reading Secret %q: %v; retrying with backoff", name, err), err: err}, false
	}
	if _, err := git.AuthFromSecret(auth.Type, secret.Data); err != nil {
		// AuthFromSecret names missing keys and unknown types, never a value.
		v := stalled(resolve.ReasonSecretInvalid, fmt.Sprintf("Secret %q, named by spec.auth.secretRef: %v", name, err))
		v.recheck = !r.SecretsWatched
		return v, false
	}
	return verdict{}, true
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

func repositoryReadyMessage(repo *scmv1alpha1.ScmRepository) string {
	creds := "no credentials (a public repository)"
	if a := repo.Spec.Auth; a != nil {
		creds = fmt.Sprintf("%s auth from Secret %q", a.Type, a.SecretRef.Name)
	}
	return fmt.Sprintf("url, ScmProvider %q and %s are usable; the git server is not contacted to check",
		repo.Spec.ProviderRef.Name, creds)
}

func (r *RepositoryReconciler) write(ctx context.Context, before, after *scmv1alpha1.ScmRepository) error {
	if equality.Semantic.DeepEqual(before.Status, after.Status) {
		return nil
	}
	written, err := r.Client.ScmV1alpha1().ScmRepositories(after.Namespace).
		UpdateStatus(ctx, after, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return fmt.Errorf("writing the status of ScmRepository %s/%s: %w", after.Namespace, after.Name, err)
	}
	announce(r.Recorder, written, before.Status.Conditions, written.Status.Conditions)
	logChange(r.Log, "ScmRepository", written, before.Status.Conditions, written.Status.Conditions)
	return nil
}
