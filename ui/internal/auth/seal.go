package auth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// MinKeyBytes is the least a cookie key file may hold.
const MinKeyBytes = 32

// sealer encrypts and authenticates cookie values with AES-256-GCM. The cookie's name is the
// additional data, so one cookie's value is never accepted as another's.
type sealer struct{ aead cipher.AEAD }

// newSealer derives the AES key from secret (at least MinKeyBytes bytes, from a key file or
// random at start) with SHA-256.
func newSealer(secret []byte) (*sealer, error) {
	if len(secret) < MinKeyBytes {
		return nil, fmt.Errorf("the cookie key holds %d bytes; it needs at least %d random bytes, such as `head -c 32 /dev/urandom | base64`", len(secret), MinKeyBytes)
	}
	key := sha256.Sum256(secret)
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead}, nil
}

// envelope is what a sealed value holds: the payload and when it stops being accepted.
type envelope struct {
	Expires int64           `json:"exp"`
	Payload json.RawMessage `json:"p"`
}

// seal encrypts v, accepted by open until expires, as a cookie-safe string.
func (s *sealer) seal(name string, v any, expires time.Time) (string, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	plain, err := json.Marshal(envelope{Expires: expires.Unix(), Payload: payload})
	if err != nil {
		return "", err
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, []byte(name))), nil
}

// Errors of open.
var (
	errTampered = errors.New("the cookie was not sealed by this UI's key, or was changed")
	errExpired  = errors.New("the cookie has expired")
)

// open decrypts a value seal made for the cookie name into v, unless it expired before now.
func (s *sealer) open(name, value string, now time.Time, v any) error {
	raw, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(raw) < s.aead.NonceSize() {
		return errTampered
	}
	nonce, sealed := raw[:s.aead.NonceSize()], raw[s.aead.NonceSize():]
	plain, err := s.aead.Open(nil, nonce, sealed, []byte(name))
	if err != nil {
		return errTampered
	}
	var env envelope
	if err := json.Unmarshal(plain, &env); err != nil {
		return errTampered
	}
	if !now.Before(time.Unix(env.Expires, 0)) {
		return errExpired
	}
	return json.Unmarshal(env.Payload, v)
}
