package scm

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	scmv1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/scm/webhook"
)

func TestWebhookTargetReadsNamespaceAndProviderFromThePath(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		code         int
		ns, provider string
		ok           bool
	}{
		{http.MethodPost, "/hooks/team/forge", http.StatusOK, "team", "forge", true},
		{http.MethodGet, "/hooks/team/forge", http.StatusMethodNotAllowed, "", "", false},
		{http.MethodPost, "/hooks/team", http.StatusNotFound, "", "", false},
		{http.MethodPost, "/hooks/team/forge/extra", http.StatusNotFound, "", "", false},
		{http.MethodPost, "/hooks//forge", http.StatusNotFound, "", "", false},
	} {
		w := httptest.NewRecorder()
		ns, provider, ok := WebhookTarget(w, httptest.NewRequest(tc.method, tc.path, nil))
		assert.Equal(t, tc.ok, ok, "%s %s", tc.method, tc.path)
		assert.Equal(t, tc.code, w.Code, "%s %s", tc.method, tc.path)
		assert.Equal(t, []string{tc.ns, tc.provider}, []string{ns, provider}, "%s %s", tc.method, tc.path)
	}
}

// signedBy accepts deliveries whose X-Token header is its secret, and parses those whose body is
// "push".
type signedBy string

func (s signedBy) VerifyWebhook(h http.Header, _ []byte) error {
	return webhook.VerifyToken([]byte(s), h.Get("X-Token"))
}

func (s signedBy) ParseWebhook(_ http.Header, body []byte) (*Event, error) {
	if string(body) != "push" {
		return nil, errors.New("not a push")
	}
	return &Event{Kind: EventPush}, nil
}

func TestVerifyDeliveryAnswersWhatItRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, token, body string
		code              int
		refusal           Refusal
	}{
		{"signed and readable", "s3cret", "push", http.StatusOK, Accepted},
		{"signed with another secret", "guess", "push", http.StatusUnauthorized, RefusedUnverified},
		{"unsigned", "", "push", http.StatusUnauthorized, RefusedUnverified},
		{"signed but unreadable", "s3cret", "{", http.StatusBadRequest, RefusedMalformed},
		{"too large", "s3cret", strings.Repeat("x", webhook.DefaultMaxBodyBytes+1), http.StatusRequestEntityTooLarge, RefusedTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/hooks/team/forge", strings.NewReader(tc.body))
			req.Header.Set("X-Token", tc.token)
			w := httptest.NewRecorder()
			ev, refusal := VerifyDelivery(w, req, signedBy("s3cret"))
			assert.Equal(t, tc.refusal, refusal)
			assert.Equal(t, tc.code, w.Code)
			assert.Equal(t, tc.refusal == Accepted, ev != nil)
			assert.NotContains(t, w.Body.String(), "s3cret")
		})
	}
}

func TestDeliveredForMatchesProviderOwnerAndNameWithoutCase(t *testing.T) {
	gr := &scmv1.ScmRepository{Spec: scmv1.ScmRepositorySpec{
		ProviderRef: scmv1.LocalObjectReference{Name: "forge"}, Owner: "Acme/Platform", Name: "App"}}
	assert.True(t, DeliveredFor(gr, "forge", Repository{Owner: "acme/platform", Name: "app"}))
	assert.False(t, DeliveredFor(gr, "other-forge", Repository{Owner: "acme/platform", Name: "app"}), "another ScmProvider")
	assert.False(t, DeliveredFor(gr, "forge", Repository{Owner: "acme", Name: "app"}), "another owner")
	assert.False(t, DeliveredFor(gr, "forge", Repository{Owner: "acme/platform", Name: "api"}), "another name")
}
