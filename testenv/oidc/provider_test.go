package oidc

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheProviderServesItsDiscoveryDocumentWithAnEndSessionEndpoint(t *testing.T) {
	p := StartForTest(t, Options{Users: []User{{Username: "alice", Password: "pw"}}})
	resp, err := http.Get(p.DiscoveryURL())
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var doc struct {
		Issuer     string   `json:"issuer"`
		EndSession string   `json:"end_session_endpoint"`
		PKCE       []string `json:"code_challenge_methods_supported"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	assert.Equal(t, p.Issuer, doc.Issuer)
	assert.Equal(t, p.Issuer+"/end_session", doc.EndSession)
	assert.Contains(t, doc.PKCE, "S256")
}
