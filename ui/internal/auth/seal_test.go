package auth

import (
	"bytes"
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testSealer(t *testing.T, key string) *sealer {
	t.Helper()
	s, err := newSealer([]byte(key))
	require.NoError(t, err)
	return s
}

func TestASealedCookieOpensOnlyUnchangedUnexpiredUnderItsOwnNameAndKey(t *testing.T) {
	s := testSealer(t, "0123456789abcdef0123456789abcdef")
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	in := session{User: "alice", Groups: []string{"team-a"}, RefreshToken: "r1"}
	value, err := s.seal(sessionCookie, in, now.Add(time.Minute))
	require.NoError(t, err)
	assert.NotContains(t, value, "alice", "the value is encrypted, not only signed")

	var out session
	require.NoError(t, s.open(sessionCookie, value, now, &out))
	assert.Equal(t, in, out)

	assert.ErrorIs(t, s.open(sessionCookie, value, now.Add(time.Minute), &out), errExpired)
	assert.ErrorIs(t, s.open(loginCookie, value, now, &out), errTampered, "a session is no login cookie")
	assert.ErrorIs(t, testSealer(t, "another key of thirty-two bytes!").open(sessionCookie, value, now, &out), errTampered)

	raw, err := base64.RawURLEncoding.DecodeString(value)
	require.NoError(t, err)
	for i := range raw {
		flipped := bytes.Clone(raw)
		flipped[i] ^= 0x01
		err := s.open(sessionCookie, base64.RawURLEncoding.EncodeToString(flipped), now, &out)
		require.ErrorIs(t, err, errTampered, "byte %d changed", i)
	}
	assert.ErrorIs(t, s.open(sessionCookie, "not base64!", now, &out), errTampered)
	assert.ErrorIs(t, s.open(sessionCookie, "", now, &out), errTampered)
}

func TestACookieKeyMustHoldThirtyTwoBytes(t *testing.T) {
	_, err := newSealer([]byte("short"))
	assert.ErrorContains(t, err, "at least 32 random bytes")
}
