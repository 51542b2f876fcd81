// Package readinesstest is the fake cluster and the objects of the ScmProvider and ScmRepository
// reconciler tests: fake clientsets, listers fed from them the way informers would be, and the
// real resolver (without an SCM: it never calls one).
package readinesstest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/sluicehq/sluice/api/generated/clientset/versioned/fake"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/readiness"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"

	_ "github.com/sluicehq/sluice/pkg/scm/builtin"
)

// Values the objects use. The credentials must never show in a condition or an Event.
const (
	NS       = "team"
	Recheck  = 7 * time.Minute
	APIToken = "ghp-very-secret-0123456789"
	Password = "hunter2-very-secret"
)

// Cluster is a fake API server with listers fed from it.
type Cluster struct {
	t        *testing.T
	Sluice   *fake.Clientset
	Kube     *kubefake.Clientset
	Recorder *record.FakeRecorder
	Resolver *resolve.Resolver

	Providers    scmlisters.ScmProviderLister
	Repositories scmlisters.ScmRepositoryLister

	providers, repos cache.Indexer
}

// NewCluster holds objects: ScmProviders and ScmRepositories in the Sluice clientset, the rest
// (Secrets, ConfigMaps) in the Kubernetes one.
func NewCluster(t *testing.T, objects ...runtime.Object) *Cluster {
	t.Helper()
	var scmObjects, kubeObjects []runtime.Object
	for _, o := range objects {
		switch o.(type) {
		case *scmv1alpha1.ScmProvider, *scmv1alpha1.ScmRepository:
			scmObjects = append(scmObjects, o)
		default:
			kubeObjects = append(kubeObjects, o)
		}
	}
	c := &Cluster{
		t:         t,
		Sluice:    fake.NewSimpleClientset(scmObjects...), //nolint:staticcheck // NewClientset needs OpenAPI schemas the generated clientset does not carry.
		Kube:      kubefake.NewClientset(kubeObjects...),
		Recorder:  record.NewFakeRecorder(100),
		providers: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		repos:     cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
	}
	c.Providers = scmlisters.NewScmProviderLister(c.providers)
	c.Repositories = scmlisters.NewScmRepositoryLister(c.repos)
	c.Resolver = &resolve.Resolver{Providers: c.Providers, Repositories: c.Repositories, Kube: c.Kube, Limiters: ratelimit.NewRegistry()}
	c.Sync()
	return c
}

// Options are the reconcilers' settings on this cluster.
func (c *Cluster) Options() readiness.Options {
	return readiness.Options{Client: c.Sluice, Recorder: c.Recorder, RecheckInterval: Recheck}
}

// Sync copies the clientset's objects into the listers' caches, as the informers would.
func (c *Cluster) Sync() {
	c.t.Helper()
	ps, err := c.Sluice.ScmV1alpha1().ScmProviders(NS).List(context.Background(), metav1.ListOptions{})
	require.NoError(c.t, err)
	for i := range ps.Items {
		require.NoError(c.t, c.providers.Update(&ps.Items[i]))
	}
	rs, err := c.Sluice.ScmV1alpha1().ScmRepositories(NS).List(context.Background(), metav1.ListOptions{})
	require.NoError(c.t, err)
	for i := range rs.Items {
		require.NoError(c.t, c.repos.Update(&rs.Items[i]))
	}
}

// Provider reads an ScmProvider from the API server.
func (c *Cluster) Provider(name string) *scmv1alpha1.ScmProvider {
	c.t.Helper()
	p, err := c.Sluice.ScmV1alpha1().ScmProviders(NS).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(c.t, err)
	return p
}

// Repository reads an ScmRepository from the API server.
func (c *Cluster) Repository(name string) *scmv1alpha1.ScmRepository {
	c.t.Helper()
	r, err := c.Sluice.ScmV1alpha1().ScmRepositories(NS).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(c.t, err)
	return r
}

// StatusWrites counts UpdateStatus calls on the Sluice clientset.
func (c *Cluster) StatusWrites() int {
	n := 0
	for _, a := range c.Sluice.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

// SecretReads counts Secret reads.
func (c *Cluster) SecretReads() int {
	n := 0
	for _, a := range c.Kube.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "secrets" {
			n++
		}
	}
	return n
}

// Events drains the Events recorded so far.
func (c *Cluster) Events() []string {
	var out []string
	for {
		select {
		case e := <-c.Recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// AssertNoSecretValues fails if any credential of the fixtures shows in conditions or events.
func AssertNoSecretValues(t *testing.T, conds []metav1.Condition, events []string) {
	t.Helper()
	text := strings.Join(events, "\n")
	for _, c := range conds {
		text += "\n" + c.Reason + " " + c.Message
	}
	for _, secret := range []string{APIToken, Password, "PRIVATE KEY", "ssh-ed25519 AAAA"} {
		assert.NotContains(t, text, secret)
	}
}

// ReadyOf is the Ready condition.
func ReadyOf(conds []metav1.Condition) *metav1.Condition {
	return conditions.Get(conds, conditions.Ready)
}

// Secret is a Secret of the test namespace.
func Secret(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: NS, Name: name, ResourceVersion: "1"}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// GitHubProvider is the ScmProvider "github" at generation 3, with its token in Secret
// "github-token".
func GitHubProvider(mutate func(*scmv1alpha1.ScmProvider)) *scmv1alpha1.ScmProvider {
	p := &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: NS, Name: "github", UID: "uid-github", Generation: 3},
		Spec: scmv1alpha1.ScmProviderSpec{
			Type:      scmv1alpha1.ScmProviderGitHub,
			SecretRef: &scmv1alpha1.LocalObjectReference{Name: "github-token"},
		},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

// ReadyProvider is a GitHubProvider whose status already says Ready at its generation.
func ReadyProvider(mutate func(*scmv1alpha1.ScmProvider)) *scmv1alpha1.ScmProvider {
	p := GitHubProvider(mutate)
	conditions.MarkReady(&p.Status.Conditions, p.Generation, readiness.ReasonValid, "usable")
	p.Status.ObservedGeneration = p.Generation
	return p
}

// Repository is the ScmRepository "app" (acme/app on GitHub) at generation 2.
func Repository(mutate func(*scmv1alpha1.ScmRepository)) *scmv1alpha1.ScmRepository {
	r := &scmv1alpha1.ScmRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: NS, Name: "app", Generation: 2},
		Spec: scmv1alpha1.ScmRepositorySpec{
			URL:         "https://github.com/acme/app.git",
			ProviderRef: scmv1alpha1.LocalObjectReference{Name: "github"},
			Owner:       "acme", Name: "app",
		},
	}
	if mutate != nil {
		mutate(r)
	}
	return r
}

// WithAuth sets url and auth of type typ from Secret "git-creds".
func WithAuth(typ scmv1alpha1.GitAuthType, url string) func(*scmv1alpha1.ScmRepository) {
	return func(r *scmv1alpha1.ScmRepository) {
		r.Spec.URL = url
		r.Spec.Auth = &scmv1alpha1.GitAuth{Type: typ, SecretRef: scmv1alpha1.LocalObjectReference{Name: "git-creds"}}
	}
}

// RSAKeyPEM is a new RSA private key.
func RSAKeyPEM(t *testing.T) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
}

// SelfSignedPEM is a CA certificate, for CA bundles that must parse.
func SelfSignedPEM(t *testing.T) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// MustSelector parses a label selector.
func MustSelector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	require.NoError(t, err)
	return sel
}
