package testenv

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
)

// UseBasicAuth points ScmRepository namespace/repository at url, read with user and password
// from a Secret git-creds it creates beside it.
func (e *Env) UseBasicAuth(t testing.TB, namespace, repository, url, user, password string) {
	t.Helper()
	ctx := context.Background()
	_, err := e.Kube.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "git-creds"},
		Data:       map[string][]byte{scmv1alpha1.GitSecretKeyUsername: []byte(user), scmv1alpha1.GitSecretKeyPassword: []byte(password)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Update(ctx, e.Sluice.ScmV1alpha1().ScmRepositories(namespace), repository, func(r *scmv1alpha1.ScmRepository) {
		r.Spec.URL = url
		r.Spec.Auth = &scmv1alpha1.GitAuth{Type: scmv1alpha1.GitAuthBasic, SecretRef: scmv1alpha1.LocalObjectReference{Name: "git-creds"}}
	})
	if err != nil {
		t.Fatal(err)
	}
}
