package gitea

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"os"
	"strings"
	"text/template"
)

// settings holds what varies between servers; everything else in app.ini is fixed for tests.
type settings struct {
	WorkDir   string
	StaticDir string
	RunUser   string
	Port      int
	// Secrets are written up front: Gitea would otherwise generate them and rewrite app.ini.
	SecretKey     string
	InternalToken string
	JWTSecret     string
}

func newConfig(workDir, staticDir, runUser string, port int) settings {
	jwt := make([]byte, 32)
	_, _ = rand.Read(jwt)
	return settings{
		WorkDir:       workDir,
		StaticDir:     staticDir,
		RunUser:       runUser,
		Port:          port,
		SecretKey:     randomHex(32),
		InternalToken: randomHex(32),
		JWTSecret:     base64.RawURLEncoding.EncodeToString(jwt),
	}
}

func randomHex(bytes int) string {
	b := make([]byte, bytes)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// appIni trades Gitea's production defaults for speed, isolation and determinism: immediate
// queues, so a push or API call has fully taken effect (branches, empty flag, webhooks) when it
// returns; in-memory sessions and cache; no SSH, mail, LFS, actions, packages, cron or code
// indexer; a cheap password hash; webhooks allowed to loopback so tests can receive them.
//
// The pull request mergeability checker is the exception and runs on a channel queue: run
// immediately, the check of a new pull request waits about 30 seconds for a lock its own caller
// holds, so every merge test waited that long.
var appIni = template.Must(template.New("app.ini").Parse(`APP_NAME = sluice test
RUN_USER = {{.RunUser}}
RUN_MODE = prod
WORK_PATH = {{.WorkDir}}

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = {{.Port}}
DOMAIN = 127.0.0.1
ROOT_URL = http://127.0.0.1:{{.Port}}/
LOCAL_ROOT_URL = http://127.0.0.1:{{.Port}}/
APP_DATA_PATH = {{.WorkDir}}/data
STATIC_ROOT_PATH = {{.StaticDir}}
OFFLINE_MODE = true
DISABLE_SSH = true
START_SSH_SERVER = false
LFS_START_SERVER = false
GRACEFUL_HAMMER_TIME = 2s

[database]
DB_TYPE = sqlite3
PATH = {{.WorkDir}}/data/gitea.db
LOG_SQL = false

[repository]
ROOT = {{.WorkDir}}/repositories
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
REQUIRE_SIGNIN_VIEW = false
ENABLE_NOTIFY_MAIL = false
DEFAULT_KEEP_EMAIL_PRIVATE = false

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
ALLOWED_HOST_LIST = loopback
DELIVER_TIMEOUT = 5

[migrations]
ALLOW_LOCALNETWORKS = true

[api]
ENABLE_SWAGGER = false

[log]
MODE = console
LEVEL = Info
ROOT_PATH = {{.WorkDir}}/log

[log.console]
COLORIZE = false
`))

func writeAppIni(path string, c settings) error {
	var b strings.Builder
	if err := appIni.Execute(&b, c); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}
