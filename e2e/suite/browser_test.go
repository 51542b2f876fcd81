package suite

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// browser starts a headless Chromium (Debian's, which hack/e2e.sh installs) with a fresh
// profile for the test, as the UI's browser tests drive it. It trusts, besides the public roots,
// the servers whose certificates are in trustPEM, by their public keys
// (--ignore-certificate-errors-spki-list): how a test browser is told of a private CA's server
// without a certificate database.
func browser(t *testing.T, trustPEM ...[]byte) context.Context {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	require.NoError(t, err, "Debian's chromium, which hack/e2e.sh installs")
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	var pins string
	for _, p := range trustPEM {
		if pins != "" {
			pins += ","
		}
		pins += spkiPin(t, p)
	}
	if pins != "" {
		opts = append(opts, chromedp.Flag("ignore-certificate-errors-spki-list", pins))
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	require.NoError(t, chromedp.Do(ctx), "start chromium")
	return ctx
}

// spkiPin is the base64 SHA-256 of a PEM certificate's public key, as Chromium's
// --ignore-certificate-errors-spki-list takes it.
func spkiPin(t *testing.T, certPEM []byte) string {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	require.NotNil(t, block, "a PEM certificate")
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// within bounds browser steps generously: each step itself waits for what it needs.
func within(ctx context.Context, t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	step, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	require.NoError(t, chromedp.Do(step, steps...))
}

// read runs one browser action that returns a value, within the same bound.
func read[T any](ctx context.Context, t *testing.T, a chromedp.Action[T]) T {
	t.Helper()
	step, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(step, a)
	require.NoError(t, err)
	return v
}
