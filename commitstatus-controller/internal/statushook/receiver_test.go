package statushook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/gitea"
)

const (
	tracked   = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"
	untracked = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2"
	secret    = "hook-secret"
)

type keys []string

func (k *keys) Enqueue(key string) { *k = append(*k, key) }

func receiver(t *testing.T, leading bool) (*Receiver, *keys) {
	t.Helper()
	idx := func(objs ...any) cache.Indexer {
		i := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		for _, o := range objs {
			require.NoError(t, i.Add(o))
		}
		return i
	}
	provider := &scmv1alpha1.ScmProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "gitea"},
		Spec: scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGitea, BaseURL: "https://gitea.example.com"}}
	repo := &scmv1alpha1.ScmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app"},
		Spec: scmv1alpha1.ScmRepositorySpec{URL: "https://gitea.example.com/acme/app.git", ProviderRef: scmv1alpha1.LocalObjectReference{Name: "gitea"}, Owner: "acme", Name: "app"}}
	strategy := func(name, proposed string) *promoterv1alpha1.PromotionStrategy {
		return &promoterv1alpha1.PromotionStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
			Spec: promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}},
			Status: promoterv1alpha1.PromotionStrategyStatus{Environments: []promoterv1alpha1.EnvironmentStatus{
				{Branch: "prod", Proposed: promoterv1alpha1.CommitState{HydratedSHA: proposed}}}}}
	}
	q := &keys{}
	return &Receiver{
		Providers:  scmlisters.NewScmProviderLister(idx(provider)),
		Repos:      scmlisters.NewScmRepositoryLister(idx(repo)),
		Strategies: promoterlisters.NewPromotionStrategyLister(idx(strategy("web", tracked), strategy("api", untracked))),
		Verify: func(context.Context, *scmv1alpha1.ScmProvider) (scm.Provider, error) {
			return gitea.NewProvider(gitea.Name, scm.Config{Key: "team/gitea", BaseURL: "https://gitea.example.com",
				Credentials: scm.Credentials{Token: "t", WebhookSecret: []byte(secret)}})
		},
		Queue: q, Leading: func() bool { return leading },
	}, q
}

func delivery(event, body, key string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/hooks/team/gitea", strings.NewReader(body))
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(body))
	req.Header.Set(gitea.SignatureHeader, hex.EncodeToString(mac.Sum(nil)))
	req.Header.Set(gitea.EventHeader, event)
	return req
}

const statusBody = `{"sha":"` + tracked + `","context":"ci/lint","state":"failure","repository":{"name":"app","owner":{"username":"acme","login":"acme"}}}`

func TestAStatusDeliveryWakesTheStrategiesTrackingItsCommit(t *testing.T) {
	r, q := receiver(t, true)
	w := httptest.NewRecorder()
	r.Handler().ServeHTTP(w, delivery("status", statusBody, secret))
	assert.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	assert.Equal(t, keys{"team/web"}, *q, "only the strategy tracking that commit")
}

func TestDeliveriesThatMustNotWakeAnything(t *testing.T) {
	for _, tc := range []struct {
		name    string
		leading bool
		req     *http.Request
		code    int
	}{
		{"signed with another secret", true, delivery("status", statusBody, "guess"), http.StatusUnauthorized},
		{"a push, which the promoter's receiver handles", true, delivery("push", `{"ref":"refs/heads/main","after":"`+tracked+`","repository":{"name":"app","owner":{"login":"acme"}}}`, secret), http.StatusAccepted},
		{"a replica that does not run the import", false, delivery("status", statusBody, secret), http.StatusServiceUnavailable},
		{"an unknown provider", true, httptest.NewRequest(http.MethodPost, "/hooks/team/nope", strings.NewReader("{}")), http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, q := receiver(t, tc.leading)
			w := httptest.NewRecorder()
			r.Handler().ServeHTTP(w, tc.req)
			assert.Equal(t, tc.code, w.Code, w.Body.String())
			assert.Empty(t, *q)
		})
	}
}
