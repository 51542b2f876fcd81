package commitstatus

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	"github.com/sluicehq/sluice/api/generated/clientset/versioned/fake"
	commitstatuslisters "github.com/sluicehq/sluice/api/generated/listers/commitstatus/v1alpha1"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile/reconciletest"
	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"

	_ "github.com/sluicehq/sluice/pkg/scm/builtin"
)

const (
	ns        = "team"
	sha       = "0123456789abcdef0123456789abcdef01234567"
	otherSHA  = "fedcba9876543210fedcba9876543210fedcba98"
	token     = "tok-very-secret-0123456789"
	statusKey = ns + "/health"
)

// fakeSCM is a provider double that records every SetCommitStatus and answers with err when set.
type fakeSCM struct {
	scm.Provider
	typ string

	mu    sync.Mutex
	calls []scm.CommitStatus
	err   error
	// tokens are the credentials each build of the provider received.
	tokens []string
}

func (f *fakeSCM) Type() string { return f.typ }

func (f *fakeSCM) Capabilities() scm.Capabilities { return scm.Capabilities{CommitStatuses: true} }

func (f *fakeSCM) SetCommitStatus(_ context.Context, _ scm.Repository, st scm.CommitStatus) (scm.CommitStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, st)
	if f.err != nil {
		return st, f.err
	}
	st.ProviderID = strconv.Itoa(len(f.calls))
	return st, nil
}

func (f *fakeSCM) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *fakeSCM) sent() []scm.CommitStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]scm.CommitStatus(nil), f.calls...)
}

// fixture is a reconciler over fake clientsets, with listers fed from them the way informers
// would be.
type fixture struct {
	t        *testing.T
	sluice   *fake.Clientset
	kube     *kubefake.Clientset
	scm      *fakeSCM
	recorder *record.FakeRecorder
	r        *Reconciler
	clock    *clocktesting.FakeClock

	statuses, repos, providers cache.Indexer
}

func newFixture(t *testing.T, objects ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{
		t:      t,
		sluice: fake.NewSimpleClientset(objects...), //nolint:staticcheck // NewClientset needs OpenAPI schemas the generated clientset does not carry.

		kube:      kubefake.NewClientset(secret("github-token", map[string]string{"token": token})),
		scm:       &fakeSCM{typ: "github"},
		recorder:  record.NewFakeRecorder(100),
		clock:     clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)),
		statuses:  cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		repos:     cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		providers: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
	}
	limiters := ratelimit.NewRegistry()
	resolver := &resolve.Resolver{
		Repositories: scmlisters.NewScmRepositoryLister(f.repos),
		Providers:    scmlisters.NewScmProviderLister(f.providers),
		Kube:         f.kube,
		Limiters:     limiters,
		Clock:        f.clock,
		New: func(name string, cfg scm.Config) (scm.Provider, error) {
			if name == "git" {
				return scm.New(name, cfg)
			}
			f.scm.tokens = append(f.scm.tokens, cfg.Credentials.Token)
			return f.scm, nil
		},
	}
	f.r = New()
	f.r.Statuses = commitstatuslisters.NewCommitStatusLister(f.statuses)
	f.r.Client = f.sluice
	f.r.Resolver = resolver
	f.r.Recorder = f.recorder
	f.r.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	f.r.Clock = f.clock
	return f
}

// sync copies the fake API server's objects into the listers, as informers would.
func (f *fixture) sync() {
	f.t.Helper()
	ctx := context.Background()
	cs, err := f.sluice.CommitstatusV1alpha1().CommitStatuses("").List(ctx, metav1.ListOptions{})
	require.NoError(f.t, err)
	repos, err := f.sluice.ScmV1alpha1().ScmRepositories("").List(ctx, metav1.ListOptions{})
	require.NoError(f.t, err)
	providers, err := f.sluice.ScmV1alpha1().ScmProviders("").List(ctx, metav1.ListOptions{})
	require.NoError(f.t, err)
	var objs []any
	for i := range cs.Items {
		objs = append(objs, &cs.Items[i])
	}
	require.NoError(f.t, f.statuses.Replace(objs, ""))
	objs = nil
	for i := range repos.Items {
		objs = append(objs, &repos.Items[i])
	}
	require.NoError(f.t, f.repos.Replace(objs, ""))
	objs = nil
	for i := range providers.Items {
		objs = append(objs, &providers.Items[i])
	}
	require.NoError(f.t, f.providers.Replace(objs, ""))
}

func (f *fixture) reconcile() (controller.Result, error) {
	f.t.Helper()
	f.sync()
	return f.r.Reconcile(context.Background(), statusKey)
}

func (f *fixture) get() *commitstatusv1alpha1.CommitStatus {
	f.t.Helper()
	cs, err := f.sluice.CommitstatusV1alpha1().CommitStatuses(ns).Get(context.Background(), "health", metav1.GetOptions{})
	require.NoError(f.t, err)
	return cs
}

func (f *fixture) update(mutate func(*commitstatusv1alpha1.CommitStatus)) {
	f.t.Helper()
	cs := f.get()
	mutate(cs)
	cs.Generation++
	_, err := f.sluice.CommitstatusV1alpha1().CommitStatuses(ns).Update(context.Background(), cs, metav1.UpdateOptions{})
	require.NoError(f.t, err)
}

func (f *fixture) events() []string { return reconciletest.Events(f.recorder) }

func commitStatus(mutate ...func(*commitstatusv1alpha1.CommitStatus)) *commitstatusv1alpha1.CommitStatus {
	cs := &commitstatusv1alpha1.CommitStatus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "health", Generation: 1, ResourceVersion: "1",
			Labels: map[string]string{commitstatusv1alpha1.KeyLabel: "health"}},
		Spec: commitstatusv1alpha1.CommitStatusSpec{
			RepositoryRef: commitstatusv1alpha1.RepositoryReference{Name: "app"},
			SHA:           sha,
			Name:          "sluice/health",
			Description:   "healthy in staging",
			Phase:         commitstatusv1alpha1.CommitStatusSuccess,
			URL:           "https://dash.example.com/staging",
		},
	}
	for _, m := range mutate {
		m(cs)
	}
	return cs
}

func repository(provider string) *scmv1alpha1.ScmRepository {
	return &scmv1alpha1.ScmRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", Generation: 1},
		Spec: scmv1alpha1.ScmRepositorySpec{
			URL:         "https://github.example.com/acme/app.git",
			ProviderRef: scmv1alpha1.LocalObjectReference{Name: provider},
			Owner:       "acme",
			Name:        "app",
		},
	}
}

func githubProvider(mutate ...func(*scmv1alpha1.ScmProvider)) *scmv1alpha1.ScmProvider {
	p := &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "github", Generation: 1, UID: "uid-github"},
		Spec: scmv1alpha1.ScmProviderSpec{
			Type:      scmv1alpha1.ScmProviderGitHub,
			BaseURL:   "https://github.example.com",
			SecretRef: &scmv1alpha1.LocalObjectReference{Name: "github-token"},
		},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func gitProvider() *scmv1alpha1.ScmProvider {
	return &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain", Generation: 1, UID: "uid-plain"},
		Spec:       scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGit},
	}
}

func secret(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// scmError builds the error a provider returns for an HTTP answer.
func scmError(code int, header http.Header) error {
	if header == nil {
		header = http.Header{}
	}
	return scm.Classify(scm.Failure{
		Provider: "github", Op: "set commit status",
		Response: &http.Response{StatusCode: code, Header: header},
		Err:      errors.New(http.StatusText(code)),
	}, scm.NewRedactor(token))
}
