// Package webhook holds the parts of webhook handling every SCM shares: reading a body with a
// size limit, and checking HMAC signatures and shared tokens in constant time.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// DefaultMaxBodyBytes is the largest delivery accepted by default. GitHub caps payloads at 25 MB;
// the events Sluice uses (push, pull request) are far smaller.
const DefaultMaxBodyBytes = 5 << 20

// ErrTooLarge is returned when a delivery is larger than the limit.
var ErrTooLarge = errors.New("webhook body is larger than the limit")

// ErrNoSecret is returned when a webhook arrives for a provider without a webhook secret.
var ErrNoSecret = errors.New("no webhook secret is configured, so the delivery cannot be verified and is refused: " +
	"set the key webhookSecret in the ScmProvider's Secret and the same secret on the SCM's webhook")

// ErrBadSignature is returned when a signature or token is missing or wrong.
var ErrBadSignature = errors.New("webhook signature is missing or does not match the configured secret")

// ReadBody reads r's body, refusing more than maxBytes (DefaultMaxBodyBytes when <= 0).
func ReadBody(r *http.Request, maxBytes int64) ([]byte, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBodyBytes
	}
	if r.ContentLength > maxBytes {
		return nil, fmt.Errorf("%w (%d > %d bytes)", ErrTooLarge, r.ContentLength, maxBytes)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading webhook body: %w", err)
	}
	if int64(len(body)) > maxBytes {
		return nil, fmt.Errorf("%w (more than %d bytes)", ErrTooLarge, maxBytes)
	}
	return body, nil
}

// VerifyHMACSHA256 checks a hex HMAC-SHA256 of body under secret. prefix is stripped from the
// header value first ("sha256=" for GitHub, "" for Gitea).
func VerifyHMACSHA256(secret []byte, body []byte, headerValue, prefix string) error {
	if len(secret) == 0 {
		return ErrNoSecret
	}
	value := strings.TrimSpace(headerValue)
	if value == "" || !strings.HasPrefix(value, prefix) {
		return ErrBadSignature
	}
	got, err := hex.DecodeString(strings.TrimPrefix(value, prefix))
	if err != nil || len(got) != sha256.Size {
		return ErrBadSignature
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return ErrBadSignature
	}
	return nil
}

// SignHMACSHA256 returns the hex HMAC-SHA256 of body under secret, as SCMs send it (without prefix).
func SignHMACSHA256(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// VerifyToken compares a shared token (GitLab's X-Gitlab-Token) in constant time.
func VerifyToken(secret []byte, headerValue string) error {
	if len(secret) == 0 {
		return ErrNoSecret
	}
	// Hashing first makes the comparison constant-time in the lengths too.
	want := sha256.Sum256(secret)
	got := sha256.Sum256([]byte(headerValue))
	if headerValue == "" || subtle.ConstantTimeCompare(want[:], got[:]) != 1 {
		return ErrBadSignature
	}
	return nil
}
