package promoter

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/scm"
)

// configError is a problem a person must fix in the cluster (a missing object, a bad secret): the
// strategy reports Stalled, and a change to its spec or the referenced objects brings it back.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

func isConfigError(err error) bool {
	var c *configError
	return errors.As(err, &c)
}

// repository is a ScmRepository resolved into what the reconcilers use.
type repository struct {
	obj      *scmv1alpha1.ScmRepository
	git      *git.Repository
	provider scm.Provider
	scmRepo  scm.Repository
}

// pullRequests reports whether pull requests live on the SCM rather than only in the cluster.
func (r *repository) pullRequests() bool { return r.provider.Capabilities().PullRequests }

// resolver turns ScmRepository names into git handles and SCM providers, keeping both for as long
// as the objects and secrets they were built from do not change.
type resolver struct {
	kube      kubernetes.Interface
	repos     scmlisters.ScmRepositoryLister
	providers scmlisters.ScmProviderLister
	cache     *git.Cache

	mu   sync.Mutex
	memo map[string]memoEntry
}

type memoEntry struct {
	version string
	repo    *repository
}

func (r *resolver) resolve(ctx context.Context, namespace, name string) (*repository, error) {
	gr, err := r.repos.ScmRepositories(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, &configError{fmt.Sprintf("ScmRepository %q does not exist in namespace %q: create it, or fix spec.repositoryRef", name, namespace)}
	}
	if err != nil {
		return nil, err
	}
	p, err := r.providers.ScmProviders(namespace).Get(gr.Spec.ProviderRef.Name)
	if apierrors.IsNotFound(err) {
		return nil, &configError{fmt.Sprintf("ScmProvider %q, named by ScmRepository %q, does not exist in namespace %q", gr.Spec.ProviderRef.Name, name, namespace)}
	}
	if err != nil {
		return nil, err
	}

	var gitSecret, scmSecret map[string][]byte
	version := gr.ResourceVersion + "/" + p.ResourceVersion
	if gr.Spec.Auth != nil {
		s, v, err := r.secret(ctx, namespace, gr.Spec.Auth.SecretRef.Name, "ScmRepository", name)
		if err != nil {
			return nil, err
		}
		gitSecret, version = s, version+"/"+v
	}
	if p.Spec.SecretRef != nil && p.Spec.Type != scmv1alpha1.ScmProviderGit {
		s, v, err := r.secret(ctx, namespace, p.Spec.SecretRef.Name, "ScmProvider", p.Name)
		if err != nil {
			return nil, err
		}
		scmSecret, version = s, version+"/"+v
	}
	var ca []byte
	if b := p.Spec.CABundle; b != nil {
		key := b.Key
		if key == "" {
			key = scmv1alpha1.DefaultCABundleKey
		}
		if b.Kind == "ConfigMap" {
			cm, err := r.kube.CoreV1().ConfigMaps(namespace).Get(ctx, b.Name, metav1.GetOptions{})
			if err != nil {
				return nil, readError("ConfigMap", b.Name, namespace, "ScmProvider", p.Name, err)
			}
			ca, version = []byte(cm.Data[key]), version+"/"+cm.ResourceVersion
		} else {
			s, v, err := r.secret(ctx, namespace, b.Name, "ScmProvider", p.Name)
			if err != nil {
				return nil, err
			}
			ca, version = s[key], version+"/"+v
		}
	}

	key := namespace + "/" + name
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.memo[key]; ok && e.version == version {
		return e.repo, nil
	}

	authType := scmv1alpha1.GitAuthType("")
	if gr.Spec.Auth != nil {
		authType = gr.Spec.Auth.Type
	}
	auth, err := git.AuthFromSecret(authType, gitSecret)
	if err != nil {
		return nil, &configError{fmt.Sprintf("ScmRepository %q: %v", name, err)}
	}
	if gr.Spec.Auth == nil || authType != scmv1alpha1.GitAuthSSH {
		auth.CABundle = ca
	}
	handle, err := r.cache.Open(gr.Spec.URL, auth, git.Options{})
	if err != nil {
		return nil, &configError{fmt.Sprintf("ScmRepository %q: %v", name, err)}
	}
	cfg, err := scm.ConfigFor(p, scmSecret, ca)
	if err != nil {
		return nil, &configError{fmt.Sprintf("ScmProvider %q: %v", p.Name, err)}
	}
	cfg.UserAgent = "sluice-promoter-controller"
	provider, err := scm.New(string(p.Spec.Type), cfg)
	if err != nil {
		return nil, &configError{fmt.Sprintf("ScmProvider %q: %v", p.Name, err)}
	}
	repo := &repository{obj: gr, git: handle, provider: provider, scmRepo: scm.RepositoryFor(gr)}
	if r.memo == nil {
		r.memo = map[string]memoEntry{}
	}
	r.memo[key] = memoEntry{version: version, repo: repo}
	return repo, nil
}

func (r *resolver) secret(ctx context.Context, namespace, name, kind, owner string) (map[string][]byte, string, error) {
	s, err := r.kube.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, "", readError("Secret", name, namespace, kind, owner, err)
	}
	return s.Data, s.ResourceVersion, nil
}

func readError(kind, name, namespace, ownerKind, owner string, err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return &configError{fmt.Sprintf("%s %q, named by %s %q, does not exist in namespace %q", kind, name, ownerKind, owner, namespace)}
	case apierrors.IsForbidden(err):
		return &configError{fmt.Sprintf("the controller may not get %s %q in namespace %q (named by %s %q): grant it with the chart's rbac values", kind, name, namespace, ownerKind, owner)}
	}
	return fmt.Errorf("read %s %s/%s: %w", kind, namespace, name, err)
}
