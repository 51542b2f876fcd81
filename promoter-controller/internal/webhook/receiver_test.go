package webhook

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	_ "github.com/sluicehq/sluice/pkg/scm/builtin"
)

func secretReads(kube *fake.Clientset) int {
	n := 0
	for _, a := range kube.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "secrets" {
			n++
		}
	}
	return n
}

// Deliveries are unauthenticated until checked: a flood of them must not turn into a flood of
// Secret reads, and a changed ScmProvider must be seen at once.
func TestWebhookVerifierReadsTheSecretOncePerProviderVersion(t *testing.T) {
	kube := fake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "gitea"},
		Data:       map[string][]byte{scmv1alpha1.SecretKeyToken: []byte("t"), scmv1alpha1.SecretKeyWebhookSecret: []byte("hook")},
	})
	p := &Receiver{Kube: kube}
	provider := &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "forge", ResourceVersion: "1"},
		Spec: scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGitea, BaseURL: "https://gitea.example.com",
			SecretRef: &scmv1alpha1.LocalObjectReference{Name: "gitea"}},
	}
	for range 20 {
		sp, _, msg := p.webhookVerifier(context.Background(), provider)
		require.NotNil(t, sp, msg)
	}
	assert.Equal(t, 1, secretReads(kube))

	// A refusal soon after the read keeps the verifier: bad deliveries cannot force reads.
	p.forgetStaleVerifier(provider)
	_, _, _ = p.webhookVerifier(context.Background(), provider)
	assert.Equal(t, 1, secretReads(kube))

	changed := provider.DeepCopy()
	changed.ResourceVersion = "2"
	_, _, _ = p.webhookVerifier(context.Background(), changed)
	assert.Equal(t, 2, secretReads(kube))
}

func TestWebhookVerifierNamesNoSecretContentOnFailure(t *testing.T) {
	p := &Receiver{Kube: fake.NewClientset()}
	provider := &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "forge"},
		Spec: scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGitea, BaseURL: "https://gitea.example.com",
			SecretRef: &scmv1alpha1.LocalObjectReference{Name: "missing"}},
	}
	sp, status, msg := p.webhookVerifier(context.Background(), provider)
	assert.Nil(t, sp)
	assert.Equal(t, 503, status)
	assert.Equal(t, "cannot read the provider's secret", msg)
}
