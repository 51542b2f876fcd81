// Package repository turns a ScmRepository into what the promoter's reconcilers work with: a
// handle on the git cache, the SCM provider and its repository, built once and kept for as long
// as the objects and secrets they were built from do not change. It also reads what the
// promoter needs from git: the dry commit of a hydrated one, and the order of dry commits.
package repository

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/scm"
)

// ConfigError is a problem a person must fix in the cluster (a missing object, a bad secret):
// the object reports Stalled, and a change to it or to the objects it names brings it back.
type ConfigError struct{ Message string }

func (e *ConfigError) Error() string { return e.Message }

// Configf is a ConfigError with a formatted message.
func Configf(format string, args ...any) error {
	return &ConfigError{Message: fmt.Sprintf(format, args...)}
}

// IsConfigError reports whether err, or an error it wraps, is a ConfigError.
func IsConfigError(err error) bool {
	var c *ConfigError
	return errors.As(err, &c)
}

// Repository is a ScmRepository resolved into what the reconcilers use.
type Repository struct {
	Object   *scmv1alpha1.ScmRepository
	Git      *git.Repository
	Provider scm.Provider
	SCM      scm.Repository
}

// HasPullRequests reports whether pull requests live on the SCM rather than only in the cluster.
func (r *Repository) HasPullRequests() bool { return r.Provider.Capabilities().PullRequests }

// Resolver turns ScmRepository names into Repositories.
type Resolver struct {
	Kube      kubernetes.Interface
	Repos     scmlisters.ScmRepositoryLister
	Providers scmlisters.ScmProviderLister
	Cache     *git.Cache

	mu   sync.Mutex
	memo map[string]memoEntry
}

type memoEntry struct {
	version string
	repo    *Repository
}

// Resolve returns the Repository of ScmRepository namespace/name. A missing or unusable object
// or secret is a ConfigError.
func (r *Resolver) Resolve(ctx context.Context, namespace, name string) (*Repository, error) {
	gr, err := r.Repos.ScmRepositories(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, Configf("ScmRepository %q does not exist in namespace %q: create it, or fix spec.repositoryRef", name, namespace)
	}
	if err != nil {
		return nil, err
	}
	p, err := r.Providers.ScmProviders(namespace).Get(gr.Spec.ProviderRef.Name)
	if apierrors.IsNotFound(err) {
		return nil, Configf("ScmProvider %q, named by ScmRepository %q, does not exist in namespace %q", gr.Spec.ProviderRef.Name, name, namespace)
	}
	if err != nil {
		return nil, err
	}
	in, err := r.read(ctx, gr, p)
	if err != nil {
		return nil, err
	}
	key := namespace + "/" + name
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.memo[key]; ok && e.version == in.version {
		return e.repo, nil
	}
	repo, err := build(gr, p, in, r.Cache)
	if err != nil {
		return nil, err
	}
	if r.memo == nil {
		r.memo = map[string]memoEntry{}
	}
	r.memo[key] = memoEntry{version: in.version, repo: repo}
	return repo, nil
}

// inputs are the secrets and CA bundle a repository is built from, and their versions.
type inputs struct {
	gitSecret, scmSecret map[string][]byte
	ca                   []byte
	version              string
}

// read gets the Secrets and ConfigMap the ScmRepository and ScmProvider name.
func (r *Resolver) read(ctx context.Context, gr *scmv1alpha1.ScmRepository, p *scmv1alpha1.ScmProvider) (inputs, error) {
	ns := gr.Namespace
	in := inputs{version: gr.ResourceVersion + "/" + p.ResourceVersion}
	if gr.Spec.Auth != nil {
		s, v, err := r.secret(ctx, ns, gr.Spec.Auth.SecretRef.Name, "ScmRepository", gr.Name)
		if err != nil {
			return in, err
		}
		in.gitSecret, in.version = s, in.version+"/"+v
	}
	if p.Spec.SecretRef != nil && p.Spec.Type != scmv1alpha1.ScmProviderGit {
		s, v, err := r.secret(ctx, ns, p.Spec.SecretRef.Name, "ScmProvider", p.Name)
		if err != nil {
			return in, err
		}
		in.scmSecret, in.version = s, in.version+"/"+v
	}
	b := p.Spec.CABundle
	if b == nil {
		return in, nil
	}
	key := b.Key
	if key == "" {
		key = scmv1alpha1.DefaultCABundleKey
	}
	if b.Kind == "ConfigMap" {
		cm, err := r.Kube.CoreV1().ConfigMaps(ns).Get(ctx, b.Name, metav1.GetOptions{})
		if err != nil {
			return in, readError("ConfigMap", b.Name, ns, "ScmProvider", p.Name, err)
		}
		in.ca, in.version = []byte(cm.Data[key]), in.version+"/"+cm.ResourceVersion
		return in, nil
	}
	s, v, err := r.secret(ctx, ns, b.Name, "ScmProvider", p.Name)
	if err != nil {
		return in, err
	}
	in.ca, in.version = s[key], in.version+"/"+v
	return in, nil
}

// build opens the git cache and the SCM provider for a repository.
func build(gr *scmv1alpha1.ScmRepository, p *scmv1alpha1.ScmProvider, in inputs, cache *git.Cache) (*Repository, error) {
	authType := scmv1alpha1.GitAuthType("")
	if gr.Spec.Auth != nil {
		authType = gr.Spec.Auth.Type
	}
	auth, err := git.AuthFromSecret(authType, in.gitSecret)
	if err != nil {
		return nil, Configf("ScmRepository %q: %v", gr.Name, err)
	}
	if gr.Spec.Auth == nil || authType != scmv1alpha1.GitAuthSSH {
		auth.CABundle = in.ca
	}
	handle, err := cache.Open(gr.Spec.URL, auth, git.Options{})
	if err != nil {
		return nil, Configf("ScmRepository %q: %v", gr.Name, err)
	}
	cfg, err := scm.ConfigFor(p, in.scmSecret, in.ca)
	if err != nil {
		return nil, Configf("ScmProvider %q: %v", p.Name, err)
	}
	cfg.UserAgent = "sluice-promoter-controller"
	provider, err := scm.New(string(p.Spec.Type), cfg)
	if err != nil {
		return nil, Configf("ScmProvider %q: %v", p.Name, err)
	}
	return &Repository{Object: gr, Git: handle, Provider: provider, SCM: scm.RepositoryFor(gr)}, nil
}

func (r *Resolver) secret(ctx context.Context, namespace, name, kind, owner string) (map[string][]byte, string, error) {
	s, err := r.Kube.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, "", readError("Secret", name, namespace, kind, owner, err)
	}
	return s.Data, s.ResourceVersion, nil
}

func readError(kind, name, namespace, ownerKind, owner string, err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return Configf("%s %q, named by %s %q, does not exist in namespace %q", kind, name, ownerKind, owner, namespace)
	case apierrors.IsForbidden(err):
		return Configf("the controller may not get %s %q in namespace %q (named by %s %q): grant it with the chart's rbac values", kind, name, namespace, ownerKind, owner)
	}
	return fmt.Errorf("read %s %s/%s: %w", kind, namespace, name, err)
}
