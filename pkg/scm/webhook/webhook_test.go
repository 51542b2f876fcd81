package webhook

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVerifyHMACSHA256(t *testing.T) {
	secret := []byte("s3cret")
	body := []byte(`{"ref":"refs/heads/main"}`)
	sig := SignHMACSHA256(secret, body)

	require.NoError(t, VerifyHMACSHA256(secret, body, "sha256="+sig, "sha256="))
	require.NoError(t, VerifyHMACSHA256(secret, body, sig, ""))

	for name, tc := range map[string]struct {
		secret []byte
		body   []byte
		header string
		want   error
	}{
		"missing header":     {secret, body, "", ErrBadSignature},
		"wrong prefix":       {secret, body, "sha1=" + sig, ErrBadSignature},
		"not hex":            {secret, body, "sha256=zz", ErrBadSignature},
		"truncated":          {secret, body, "sha256=" + sig[:20], ErrBadSignature},
		"other secret":       {[]byte("other"), body, "sha256=" + sig, ErrBadSignature},
		"tampered body":      {secret, append(bytes.Clone(body), ' '), "sha256=" + sig, ErrBadSignature},
		"no secret set":      {nil, body, "sha256=" + sig, ErrNoSecret},
		"signature of empty": {secret, body, "sha256=" + SignHMACSHA256(secret, nil), ErrBadSignature},
	} {
		t.Run(name, func(t *testing.T) {
			assert.ErrorIs(t, VerifyHMACSHA256(tc.secret, tc.body, tc.header, "sha256="), tc.want)
		})
	}
}

func TestVerifyToken(t *testing.T) {
	require.NoError(t, VerifyToken([]byte("tok"), "tok"))
	assert.ErrorIs(t, VerifyToken([]byte("tok"), "tok "), ErrBadSignature)
	assert.ErrorIs(t, VerifyToken([]byte("tok"), ""), ErrBadSignature)
	assert.ErrorIs(t, VerifyToken([]byte("tok"), "to"), ErrBadSignature)
	assert.ErrorIs(t, VerifyToken(nil, "tok"), ErrNoSecret)
}

func TestReadBodyEnforcesTheSizeLimit(t *testing.T) {
	small := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader("0123456789"))
	body, err := ReadBody(small, 10)
	require.NoError(t, err)
	assert.Equal(t, "0123456789", string(body))

	declared := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader("01234567890"))
	_, err = ReadBody(declared, 10)
	assert.ErrorIs(t, err, ErrTooLarge)

	// A body that lies about its length (chunked) is cut at the limit, not read whole.
	chunked := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(strings.Repeat("x", 1000)))
	chunked.ContentLength = -1
	_, err = ReadBody(chunked, 10)
	assert.ErrorIs(t, err, ErrTooLarge)
}
