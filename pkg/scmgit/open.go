// Package scmgit opens the git repository a ScmRepository (scm.sluice.dev) names, with the
// credentials of its Secret and the CA bundle of its ScmProvider, as a handle on a git.Cache.
// Handles are kept while the objects they were built from do not change, so a reconcile costs
// no Secret read once the first one is done.
package scmgit

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
)

// ConfigError is a problem a person must fix in the cluster (a missing object or Secret key, a
// bad URL): report it as Stalled. Its message names what to fix and never carries a secret.
type ConfigError struct{ Message string }

func (e *ConfigError) Error() string { return e.Message }

// IsConfigError reports whether err is (or wraps) a ConfigError.
func IsConfigError(err error) bool {
	var c *ConfigError
	return errors.As(err, &c)
}

// Opener turns ScmRepository names into git handles.
type Opener struct {
	Kube      kubernetes.Interface
	Repos     scmlisters.ScmRepositoryLister
	Providers scmlisters.ScmProviderLister
	Cache     *git.Cache

	mu   sync.Mutex
	memo map[string]memo
}

type memo struct {
	version string
	repo    *git.Repository
}

// Open returns the git handle of ScmRepository namespace/name.
func (o *Opener) Open(ctx context.Context, namespace, name string) (*git.Repository, error) {
	gr, err := o.Repos.ScmRepositories(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, &ConfigError{fmt.Sprintf("ScmRepository %q does not exist in namespace %q: create it, or fix the reference", name, namespace)}
	}
	if err != nil {
		return nil, err
	}
	p, err := o.Providers.ScmProviders(namespace).Get(gr.Spec.ProviderRef.Name)
	if apierrors.IsNotFound(err) {
		return nil, &ConfigError{fmt.Sprintf("ScmProvider %q, named by ScmRepository %q, does not exist in namespace %q", gr.Spec.ProviderRef.Name, name, namespace)}
	}
	if err != nil {
		return nil, err
	}
	version := gr.ResourceVersion + "/" + p.ResourceVersion
	var secret map[string][]byte
	if gr.Spec.Auth != nil {
		s, err := o.read(ctx, namespace, "Secret", gr.Spec.Auth.SecretRef.Name, "ScmRepository", name)
		if err != nil {
			return nil, err
		}
		secret, version = s.data, version+"/"+s.version
	}
	ca, caVersion, err := o.caBundle(ctx, p)
	if err != nil {
		return nil, err
	}
	version += "/" + caVersion

	key := namespace + "/" + name
	o.mu.Lock()
	defer o.mu.Unlock()
	if m, ok := o.memo[key]; ok && m.version == version {
		return m.repo, nil
	}
	var authType scmv1alpha1.GitAuthType
	if gr.Spec.Auth != nil {
		authType = gr.Spec.Auth.Type
	}
	auth, err := git.AuthFromSecret(authType, secret)
	if err != nil {
		return nil, &ConfigError{fmt.Sprintf("ScmRepository %q: %v", name, err)}
	}
	if authType != scmv1alpha1.GitAuthSSH {
		auth.CABundle = ca
	}
	repo, err := o.Cache.Open(gr.Spec.URL, auth, git.Options{})
	if err != nil {
		return nil, &ConfigError{fmt.Sprintf("ScmRepository %q: %v", name, err)}
	}
	if o.memo == nil {
		o.memo = map[string]memo{}
	}
	o.memo[key] = memo{version: version, repo: repo}
	return repo, nil
}

func (o *Opener) caBundle(ctx context.Context, p *scmv1alpha1.ScmProvider) ([]byte, string, error) {
	b := p.Spec.CABundle
	if b == nil {
		return nil, "", nil
	}
	key := b.Key
	if key == "" {
		key = scmv1alpha1.DefaultCABundleKey
	}
	kind := "Secret"
	if b.Kind == "ConfigMap" {
		kind = "ConfigMap"
	}
	obj, err := o.read(ctx, p.Namespace, kind, b.Name, "ScmProvider", p.Name)
	if err != nil {
		return nil, "", err
	}
	return obj.data[key], obj.version, nil
}

type readObject struct {
	data    map[string][]byte
	version string
}

func (o *Opener) read(ctx context.Context, namespace, kind, name, ownerKind, owner string) (readObject, error) {
	var out readObject
	var err error
	if kind == "ConfigMap" {
		var cm *corev1.ConfigMap
		if cm, err = o.Kube.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
			out.data, out.version = map[string][]byte{}, cm.ResourceVersion
			for k, v := range cm.Data {
				out.data[k] = []byte(v)
			}
		}
	} else {
		var s *corev1.Secret
		if s, err = o.Kube.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
			out.data, out.version = s.Data, s.ResourceVersion
		}
	}
	switch {
	case err == nil:
		return out, nil
	case apierrors.IsNotFound(err):
		return out, &ConfigError{fmt.Sprintf("%s %q, named by %s %q, does not exist in namespace %q", kind, name, ownerKind, owner, namespace)}
	case apierrors.IsForbidden(err):
		return out, &ConfigError{fmt.Sprintf("the controller may not get %s %q in namespace %q (named by %s %q): grant it with the chart's rbac values", kind, name, namespace, ownerKind, owner)}
	}
	return out, fmt.Errorf("read %s %s/%s: %w", kind, namespace, name, err)
}
