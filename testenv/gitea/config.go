package gitea

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"text/template"
)

// AppIni says where a Gitea server lives and how it is reached; everything else in its app.ini
// is fixed for tests. testenv's own servers and the end-to-end suite's Gitea pod share it.
type AppIni struct {
	WorkDir   string // WORK_PATH: data, repositories and log go below it
	StaticDir string
	RunUser   string
	// ListenAddr and Port are where Gitea listens; Domain, RootURL and LocalRootURL how clients
	// and Gitea itself reach it.
	ListenAddr, Domain, RootURL, LocalRootURL string
	Port                                      int
	// CertFile and KeyFile, when set, make Gitea serve HTTPS.
	CertFile, KeyFile string
	// WebhookHosts is Gitea's webhook ALLOWED_HOST_LIST: loopback for a server beside the tests,
	// private for a pod that calls a Service.
	WebhookHosts string
}

// localAppIni is a server on loopback, on port.
func localAppIni(workDir, staticDir, runUser string, port int) AppIni {
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	return AppIni{WorkDir: workDir, StaticDir: staticDir, RunUser: runUser, ListenAddr: "127.0.0.1", Port: port,
		Domain: "127.0.0.1", RootURL: url, LocalRootURL: url, WebhookHosts: "loopback"}
}

// settings are an AppIni with fresh secrets, written up front: Gitea would otherwise generate
// them and rewrite app.ini.
type settings struct {
	AppIni
	SecretKey     string
	InternalToken string
	JWTSecret     string
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
{{- if .CertFile}}
PROTOCOL = https
CERT_FILE = {{.CertFile}}
KEY_FILE = {{.KeyFile}}
{{- else}}
PROTOCOL = http
{{- end}}
HTTP_ADDR = {{.ListenAddr}}
HTTP_PORT = {{.Port}}
DOMAIN = {{.Domain}}
ROOT_URL = {{.RootURL}}
LOCAL_ROOT_URL = {{.LocalRootURL}}
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
ALLOWED_HOST_LIST = {{.WebhookHosts}}
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

// Render is the app.ini of c, with fresh secrets.
func (c AppIni) Render() ([]byte, error) {
	jwt := make([]byte, 32)
	if _, err := rand.Read(jwt); err != nil {
		return nil, err
	}
	var b strings.Builder
	err := appIni.Execute(&b, settings{AppIni: c, SecretKey: randomHex(32), InternalToken: randomHex(32),
		JWTSecret: base64.RawURLEncoding.EncodeToString(jwt)})
	return []byte(b.String()), err
}

func writeAppIni(path string, c AppIni) error {
	data, err := c.Render()
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}
