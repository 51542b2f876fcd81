package auth

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAfterSigningInAPersonIsSentOnlyToAPathOfThisUI(t *testing.T) {
	for next, want := range map[string]string{
		"/pipelines/team-a/web?tab=1": "/pipelines/team-a/web?tab=1",
		"/":                           "/",
		"":                            "/",
		"https://evil.example.com/":   "/",
		"//evil.example.com/x":        "/",
		"/\\evil.example.com":         "/",
		"/%0d%0aSet-Cookie:x=y":       "/%0d%0aSet-Cookie:x=y",
		"/a\r\nLocation: x":           "/",
		"javascript:alert(1)":         "/",
		"pipelines":                   "/",
	} {
		assert.Equal(t, want, localPath(next), next)
	}
}

func TestSignOutTakesOnlyAPostFromThisOrigin(t *testing.T) {
	req := func(h map[string]string) bool {
		r := httptest.NewRequest("POST", "http://sluice.example.com/oidc/logout", nil)
		for k, v := range h {
			r.Header.Set(k, v)
		}
		return sameOrigin(r)
	}
	assert.True(t, req(map[string]string{"Sec-Fetch-Site": "same-origin"}))
	assert.False(t, req(map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://sluice.example.com"}))
	assert.True(t, req(map[string]string{"Origin": "http://sluice.example.com"}))
	assert.False(t, req(map[string]string{"Origin": "http://evil.example.com"}))
	assert.False(t, req(nil), "neither header: not a browser's own form")
}
