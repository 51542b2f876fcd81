package resolve

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
)

// credentials are what an ScmProvider's Secret and CA bundle hold, and which versions of them.
type credentials struct {
	secret  map[string][]byte
	ca      []byte
	version string
}

// readCredentials gets the Secret named by spec.secretRef and the CA bundle, if any. Errors name
// the object and key to fix, never a value.
func (r *Resolver) readCredentials(ctx context.Context, p *scmv1alpha1.ScmProvider) (credentials, *Error) {
	var c credentials
	if ref := p.Spec.SecretRef; ref != nil && p.Spec.Type != scmv1alpha1.ScmProviderGit {
		secret, err := r.Kube.CoreV1().Secrets(p.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return c, readError("Secret", ref.Name, p, err)
		}
		c.secret = secret.Data
		c.version = fmt.Sprintf("secret %s@%s", ref.Name, secret.ResourceVersion)
	}
	if b := p.Spec.CABundle; b != nil {
		key := b.Key
		if key == "" {
			key = scmv1alpha1.DefaultCABundleKey
		}
		var (
			pem     []byte
			version string
		)
		switch b.Kind {
		case "ConfigMap":
			cm, err := r.Kube.CoreV1().ConfigMaps(p.Namespace).Get(ctx, b.Name, metav1.GetOptions{})
			if err != nil {
				return c, readError("ConfigMap", b.Name, p, err)
			}
			pem, version = []byte(cm.Data[key]), cm.ResourceVersion
			if len(pem) == 0 {
				pem = cm.BinaryData[key]
			}
		default:
			secret, err := r.Kube.CoreV1().Secrets(p.Namespace).Get(ctx, b.Name, metav1.GetOptions{})
			if err != nil {
				return c, readError("Secret", b.Name, p, err)
			}
			pem, version = secret.Data[key], secret.ResourceVersion
		}
		if len(pem) == 0 {
			return c, &Error{Reason: ReasonCABundleInvalid, Unwatched: true, Message: fmt.Sprintf(
				"ScmProvider %q: %s %q has no key %s: put the PEM certificates of the SCM's CA there, or set spec.caBundle.key",
				p.Name, b.Kind, b.Name, key)}
		}
		c.ca = pem
		c.version += fmt.Sprintf(" ca %s/%s@%s", b.Kind, b.Name, version)
	}
	return c, nil
}

func readError(kind, name string, p *scmv1alpha1.ScmProvider, err error) *Error {
	switch {
	case apierrors.IsNotFound(err):
		return &Error{Reason: ReasonSecretNotFound, Unwatched: true, Message: fmt.Sprintf(
			"%s %q, named by ScmProvider %q, does not exist in namespace %q: create it, or fix the ScmProvider",
			kind, name, p.Name, p.Namespace)}
	case apierrors.IsForbidden(err):
		return &Error{Reason: ReasonSecretForbidden, Unwatched: true, Message: fmt.Sprintf(
			"the controller may not read %s %q in namespace %q, named by ScmProvider %q: allow it with the chart's "+
				"secretAccess values (namespaces, resourceNames)", kind, name, p.Namespace, p.Name)}
	}
	return &Error{Reason: ReasonLookupFailed, Transient: true, Message: fmt.Sprintf(
		"reading %s %q of ScmProvider %q: %v", kind, name, p.Name, err)}
}
