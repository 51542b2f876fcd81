package suite

import (
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/testenv/gitea"
)

// giteaAppIni is testenv/gitea's app.ini for a pod: HTTPS on the Service address, data on an
// emptyDir, and webhooks allowed to private addresses, where the promoter's Service is.
func giteaAppIni(t *testing.T) []byte {
	t.Helper()
	ini, err := gitea.AppIni{
		WorkDir: "/data", StaticDir: "/opt/gitea/static", RunUser: "gitea",
		ListenAddr: "0.0.0.0", Port: 3000,
		Domain: giteaIP, RootURL: "https://" + giteaIP + "/", LocalRootURL: "https://127.0.0.1:3000/",
		CertFile: "/etc/gitea/tls.crt", KeyFile: "/etc/gitea/tls.key",
		WebhookHosts: "private",
	}.Render()
	require.NoError(t, err)
	return ini
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}
