package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/ui/internal/gitdiff"
)

// kubeFor is a Kubernetes client that reads as the person: their kubeconfig in local mode, else
// the UI's own identity impersonating them, so RBAC decides what they may read.
func (a *Actor) kubeFor(id Identity) (kubernetes.Interface, error) {
	cfg := rest.CopyConfig(a.Config)
	if id.Impersonate {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: id.User, Groups: id.Groups}
	}
	return kubernetes.NewForConfig(cfg)
}

// readRefusal is a read the person may not make, with the status and the message the page shows.
type readRefusal struct {
	Status  int
	Message string
}

func (e *readRefusal) Error() string { return e.Message }

// personSource is how to read repo with the credentials the person may read: its Secret (and
// its provider's CA bundle) got with kube, the person's client. A person who may not get the
// Secret is refused (403) and nothing is read: the UI never reads a repository with a
// credential the person could not use.
func personSource(ctx context.Context, kube kubernetes.Interface, repo *scmv1alpha1.ScmRepository, provider *scmv1alpha1.ScmProvider) (gitdiff.Source, error) {
	src := gitdiff.Source{URL: repo.Spec.URL}
	var authType scmv1alpha1.GitAuthType
	var data map[string][]byte
	if a := repo.Spec.Auth; a != nil {
		authType = a.Type
		s, err := kube.CoreV1().Secrets(repo.Namespace).Get(ctx, a.SecretRef.Name, metav1.GetOptions{})
		if err != nil {
			return src, readRefused(err, "Secret", repo.Namespace, a.SecretRef.Name, "the credentials of ScmRepository "+repo.Name)
		}
		data = s.Data
	}
	auth, err := git.AuthFromSecret(authType, data)
	if err != nil {
		return src, &readRefusal{http.StatusUnprocessableEntity, fmt.Sprintf("ScmRepository %s/%s: %v", repo.Namespace, repo.Name, err)}
	}
	if provider != nil && provider.Spec.CABundle != nil && authType != scmv1alpha1.GitAuthSSH {
		if src.CABundle, err = caBundle(ctx, kube, provider); err != nil {
			return src, err
		}
	}
	if src.Auth, err = auth.TransportAuth(repo.Spec.URL, os.TempDir()); err != nil {
		return src, &readRefusal{http.StatusUnprocessableEntity, fmt.Sprintf("ScmRepository %s/%s: %v", repo.Namespace, repo.Name, err)}
	}
	return src, nil
}

func caBundle(ctx context.Context, kube kubernetes.Interface, p *scmv1alpha1.ScmProvider) ([]byte, error) {
	b := p.Spec.CABundle
	key := b.Key
	if key == "" {
		key = scmv1alpha1.DefaultCABundleKey
	}
	what := "the CA bundle of ScmProvider " + p.Name
	if b.Kind == "ConfigMap" {
		cm, err := kube.CoreV1().ConfigMaps(p.Namespace).Get(ctx, b.Name, metav1.GetOptions{})
		if err != nil {
			return nil, readRefused(err, "ConfigMap", p.Namespace, b.Name, what)
		}
		return []byte(cm.Data[key]), nil
	}
	s, err := kube.CoreV1().Secrets(p.Namespace).Get(ctx, b.Name, metav1.GetOptions{})
	if err != nil {
		return nil, readRefused(err, "Secret", p.Namespace, b.Name, what)
	}
	return s.Data[key], nil
}

// readRefused says why the person's read of kind namespace/name failed, in the API server's words.
func readRefused(err error, kind, namespace, name, what string) error {
	switch {
	case apierrors.IsForbidden(err):
		return &readRefusal{http.StatusForbidden, fmt.Sprintf("You may not read %s %s/%s, %s, so the UI does not read the repository for you: it reads it only with credentials you may read. Ask for get on that %s, or compare the commits on the SCM. The API server said: %v",
			kind, namespace, name, what, kind, err)}
	case apierrors.IsNotFound(err):
		return &readRefusal{http.StatusNotFound, fmt.Sprintf("%s %s/%s, %s, does not exist", kind, namespace, name, what)}
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return &readRefusal{statusOf(err), fmt.Sprintf("reading %s %s/%s: %v", kind, namespace, name, err)}
	}
	return err
}
