package scmobjects

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

	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/api/generated/clientset/versioned/fake"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"

	_ "github.com/sluicehq/sluice/pkg/scm/builtin"
)

const (
	ns       = "team"
	recheck  = 7 * time.Minute
	apiToken = "ghp-very-secret-0123456789"
	password = "hunter2-very-secret"
)

// fixture runs both reconcilers over fake clientsets, with listers fed from them the way
// informers would be, and the real resolver (without an SCM: it never calls one).
type fixture struct {
	t                *testing.T
	sluice           *fake.Clientset
	kube             *kubefake.Clientset
	recorder         *record.FakeRecorder
	resolver         *resolve.Resolver
	providers, repos cache.Indexer
	pr               *ProviderReconciler
	rr               *RepositoryReconciler
}

func newFixture(t *testing.T, objects ...runtime.Object) *fixture {
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
	f := &fixture{
		t:         t,
		sluice:    fake.NewSimpleClientset(scmObjects...), //nolint:staticcheck // NewClientset needs OpenAPI schemas the generated clientset does not carry.
		kube:      kubefake.NewClientset(kubeObjects...),
		recorder:  record.NewFakeRecorder(100),
		providers: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		repos:     cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
	}
	f.resolver = &resolve.Resolver{
		Providers:    scmlisters.NewScmProviderLister(f.providers),
		Repositories: scmlisters.NewScmRepositoryLister(f.repos),
		Kube:         f.kube,
		Limiters:     ratelimit.NewRegistry(),
	}
	f.pr = &ProviderReconciler{
		Providers: scmlisters.NewScmProviderLister(f.providers), Client: f.sluice, Checker: f.resolver,
		Recorder: f.recorder, RecheckInterval: recheck,
	}
	f.rr = &RepositoryReconciler{
		Repositories: scmlisters.NewScmRepositoryLister(f.repos), Providers: scmlisters.NewScmProviderLister(f.providers),
		Kube: f.kube, Client: f.sluice, Recorder: f.recorder, RecheckInterval: recheck,
	}
	f.sync()
	return f
}

// sync copies the clientset's objects into the listers' caches, as the informers would.
func (f *fixture) sync() {
	f.t.Helper()
	ps, err := f.sluice.ScmV1alpha1().ScmProviders(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(f.t, err)
	for i := range ps.Items {
		require.NoError(f.t, f.providers.Update(&ps.Items[i]))
	}
	rs, err := f.sluice.ScmV1alpha1().ScmRepositories(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(f.t, err)
	for i := range rs.Items {
		require.NoError(f.t, f.repos.Update(&rs.Items[i]))
	}
}

func (f *fixture) reconcileProvider(name string) (controller.Result, error) {
	f.t.Helper()
	res, err := f.pr.Reconcile(context.Background(), ns+"/"+name)
	f.sync()
	return res, err
}

func (f *fixture) reconcileRepository(name string) (controller.Result, error) {
	f.t.Helper()
	res, err := f.rr.Reconcile(context.Background(), ns+"/"+name)
	f.sync()
	return res, err
}

func (f *fixture) provider(name string) *scmv1alpha1.ScmProvider {
	f.t.Helper()
	p, err := f.sluice.ScmV1alpha1().ScmProviders(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return p
}

func (f *fixture) repository(name string) *scmv1alpha1.ScmRepository {
	f.t.Helper()
	r, err := f.sluice.ScmV1alpha1().ScmRepositories(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return r
}

// statusWrites counts UpdateStatus calls on the sluice clientset.
func (f *fixture) statusWrites() int {
	n := 0
	for _, a := range f.sluice.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func (f *fixture) secretReads() int {
	n := 0
	for _, a := range f.kube.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "secrets" {
			n++
		}
	}
	return n
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// assertNoSecretValues fails if any credential of the fixtures shows in conditions or events.
func assertNoSecretValues(t *testing.T, conds []metav1.Condition, events []string) {
	t.Helper()
	text := strings.Join(events, "\n")
	for _, c := range conds {
		text += "\n" + c.Reason + " " + c.Message
	}
	for _, secret := range []string{apiToken, password, "PRIVATE KEY", "ssh-ed25519 AAAA"} {
		assert.NotContains(t, text, secret)
	}
}

func readyOf(conds []metav1.Condition) *metav1.Condition {
	return conditions.Get(conds, conditions.Ready)
}

func secret(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func githubProvider(mutate func(*scmv1alpha1.ScmProvider)) *scmv1alpha1.ScmProvider {
	p := &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "github", UID: "uid-github", Generation: 3},
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

// readyProvider is an ScmProvider whose status already says Ready at its generation.
func readyProvider(mutate func(*scmv1alpha1.ScmProvider)) *scmv1alpha1.ScmProvider {
	p := githubProvider(mutate)
	conditions.MarkReady(&p.Status.Conditions, p.Generation, ReasonValid, "usable")
	p.Status.ObservedGeneration = p.Generation
	return p
}

func repository(mutate func(*scmv1alpha1.ScmRepository)) *scmv1alpha1.ScmRepository {
	r := &scmv1alpha1.ScmRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", Generation: 2},
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

func rsaKeyPEM(t *testing.T) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
}

// selfSignedPEM is a CA certificate, for CA bundles that must parse.
func selfSignedPEM(t *testing.T) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func mustSelector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	require.NoError(t, err)
	return sel
}
