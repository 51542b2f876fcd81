package suite

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
	"text/template"

	"github.com/stretchr/testify/require"
)

// giteaIni is testenv/gitea's app.ini for a pod: HTTPS on the Service address, data on an
// emptyDir, and webhooks allowed to private addresses, where the promoter's Service is.
var giteaIni = template.Must(template.New("app.ini").Parse(`APP_NAME = sluice e2e
RUN_USER = gitea
RUN_MODE = prod
WORK_PATH = /data

[server]
PROTOCOL = https
HTTP_ADDR = 0.0.0.0
HTTP_PORT = 3000
CERT_FILE = /etc/gitea/tls.crt
KEY_FILE = /etc/gitea/tls.key
DOMAIN = {{.IP}}
ROOT_URL = https://{{.IP}}/
LOCAL_ROOT_URL = https://127.0.0.1:3000/
APP_DATA_PATH = /data/data
STATIC_ROOT_PATH = /opt/gitea/static
OFFLINE_MODE = true
DISABLE_SSH = true
START_SSH_SERVER = false
LFS_START_SERVER = false

[database]
DB_TYPE = sqlite3
PATH = /data/data/gitea.db

[repository]
ROOT = /data/repositories
DEFAULT_BRANCH = main

[repository.signing]
SIGNING_KEY = none

[security]
INSTALL_LOCK = true
SECRET_KEY = {{.SecretKey}}
INTERNAL_TOKEN = {{.InternalToken}}
PASSWORD_HASH_ALGO = pbkdf2$1000$32
DISABLE_QUERY_AUTH_TOKEN = true

[oauth2]
ENABLED = false
JWT_SECRET = {{.JWTSecret}}

[service]
DISABLE_REGISTRATION = true

[mailer]
ENABLED = false

[queue]
TYPE = immediate

[queue.issue_indexer]
TYPE = channel

[queue.pr_patch_checker]
TYPE = channel

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[cron]
ENABLED = false

[cron.update_checker]
ENABLED = false

[actions]
ENABLED = false

[packages]
ENABLED = false

[webhook]
ALLOWED_HOST_LIST = private
DELIVER_TIMEOUT = 5

[log]
MODE = console
LEVEL = Info
ROOT_PATH = /data/log
`))

func giteaAppIni(t *testing.T) []byte {
	t.Helper()
	jwt := make([]byte, 32)
	_, err := rand.Read(jwt)
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, giteaIni.Execute(&b, map[string]string{
		"IP": giteaIP, "SecretKey": randomHex(t, 32), "InternalToken": randomHex(t, 32),
		"JWTSecret": base64.RawURLEncoding.EncodeToString(jwt),
	}))
	return []byte(b.String())
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}
