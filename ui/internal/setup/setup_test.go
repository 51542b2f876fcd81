package setup

import (
	"bytes"
	"flag"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigFlagsAndValidate(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	var cfg Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	cfg.AddFlags(fs)
	assert.Equal(t, IdentityKubeconfig, cfg.Identity, "outside a cluster: local mode")
	assert.Equal(t, "127.0.0.1:8092", cfg.Listen, "local mode serves on loopback")
	require.NoError(t, cfg.Validate())

	assert.Empty(t, cfg.TrustedProxies, "no address is trusted by default, loopback least of all")

	require.NoError(t, fs.Parse([]string{"--identity", "proxy", "--trusted-proxies", "10.0.0.7/32, 10.0.0.8/32", "--listen", ":8092"}))
	assert.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.7/32"), netip.MustParsePrefix("10.0.0.8/32")}, cfg.TrustedProxies)
	assert.ErrorContains(t, cfg.Validate(), "--trusted-proxies needs the proxy's ID token verified", "an address alone is never enough")
	cfg.OIDC.IssuerURL, cfg.OIDC.ClientID = "https://idp.example.com", "oauth2-proxy"
	require.NoError(t, cfg.Validate(), "with the proxy's ID token verified it is")
	assert.Error(t, fs.Parse([]string{"--trusted-proxies", "everyone"}))

	cfg.Identity = "admin"
	assert.ErrorContains(t, cfg.Validate(), "kubeconfig, proxy, oidc or none")
	cfg.Identity, cfg.Listen = IdentityNone, "8092"
	assert.ErrorContains(t, cfg.Validate(), "host:port")
}

func TestInAClusterTheUIIsReadOnlyByDefault(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
	var cfg Config
	cfg.AddFlags(flag.NewFlagSet("test", flag.ContinueOnError))
	assert.Equal(t, IdentityNone, cfg.Identity)
}

func TestProxyModeValidationNamesEveryProblem(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
	parse := func(args ...string) *Config {
		var cfg Config
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		cfg.AddFlags(fs)
		require.NoError(t, fs.Parse(append([]string{"--listen", ":8092"}, args...)))
		return &cfg
	}
	sidecar := parse("--identity", "proxy", "--proxy-socket", "/run/sluice-ui/ui.sock")
	require.NoError(t, sidecar.Validate())
	assert.Equal(t, "/run/sluice-ui/ui.sock", sidecar.ProxySocket)

	assert.ErrorContains(t, parse("--identity", "proxy").Validate(), "needs --proxy-socket (a sidecar proxy) or --oidc-issuer-url")
	for _, loopback := range []string{"127.0.0.1/32", "::1/128", "0.0.0.0/0", "::ffff:127.0.0.1/128", "127.8.0.0/16"} {
		assert.ErrorContains(t, parse("--identity", "proxy", "--trusted-proxies", loopback).Validate(), "covers loopback", loopback)
	}
	err := parse("--identity", "proxy", "--proxy-user-header", "", "--proxy-socket", "ui.sock", "--trusted-proxies", "10.0.0.7/32,127.0.0.1/32").Validate()
	require.Error(t, err)
	for _, problem := range []string{"needs --proxy-user-header", `"ui.sock" must be an absolute path`, "127.0.0.1/32 covers loopback"} {
		assert.ErrorContains(t, err, problem)
	}
	assert.NotContains(t, err.Error(), "10.0.0.7", "a proxy in another pod is fine")
	assert.ErrorContains(t, parse("--proxy-socket", "/run/ui.sock").Validate(), "for --identity=proxy only, not none")
}

func TestTheProxySocketReplacesAStaleSocketOnlyAndIsNotWorldWritable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ui.sock")
	stale, err := net.Listen("unix", path)
	require.NoError(t, err)
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, stale.Close())
	require.FileExists(t, path, "a socket an earlier run left behind")

	ln, err := ListenProxySocket(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSocket, fi.Mode().Type())
	assert.Equal(t, os.FileMode(0o660), fi.Mode().Perm())
	conn, err := net.Dial("unix", path)
	require.NoError(t, err, "the new socket answers")
	_ = conn.Close()

	file := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(file, []byte("keep me"), 0o600))
	_, err = ListenProxySocket(file)
	assert.ErrorContains(t, err, "is not a socket; refusing to replace it")
	assert.FileExists(t, file)
}

func TestLocalModeRefusesANonLoopbackListenUnlessAskedTo(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	parse := func(args ...string) *Config {
		var cfg Config
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		cfg.AddFlags(fs)
		require.NoError(t, fs.Parse(args))
		return &cfg
	}
	for _, listen := range []string{"0.0.0.0:18093", ":8092", "192.0.2.1:8092", "[::]:8092", "example.com:8092"} {
		assert.ErrorContains(t, parse("--listen", listen).Validate(), "is not a loopback address", listen)
	}
	for _, listen := range []string{"127.0.0.1:0", "[::1]:8092", "localhost:8092", "127.0.0.2:8092"} {
		assert.NoError(t, parse("--listen", listen).Validate(), listen)
	}
	anywhere := parse("--listen", "0.0.0.0:18093", "--insecure-listen-anywhere")
	require.NoError(t, anywhere.Validate())
	var logged bytes.Buffer
	local := localIdentity(*anywhere, "alice", slog.New(slog.NewTextHandler(&logged, nil)))
	assert.Contains(t, logged.String(), "level=WARN")
	assert.Contains(t, logged.String(), "--insecure-listen-anywhere")
	assert.Len(t, local.Token, 64, "a random token all the same")

	assert.NoError(t, parse("--identity", "none", "--listen", ":8092").Validate(), "only local mode is bound to loopback")
}

func TestEachLaunchHasItsOwnToken(t *testing.T) {
	t.Setenv(tokenEnv, "")
	cfg := Config{Identity: IdentityKubeconfig}
	a, b := launchToken(cfg), launchToken(cfg)
	assert.Len(t, a, 64)
	assert.NotEqual(t, a, b)
	t.Setenv(tokenEnv, "chosen")
	assert.Equal(t, "chosen", launchToken(cfg))
	assert.Empty(t, launchToken(Config{Identity: IdentityNone}), "no token outside local mode")
	assert.Equal(t, "http://127.0.0.1:8092/?token=chosen", LaunchURL("127.0.0.1:8092", "chosen"))
}

func TestAnonymousReadingIsAnOptInThatWarns(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
	parse := func(args ...string) *Config {
		var cfg Config
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		cfg.AddFlags(fs)
		require.NoError(t, fs.Parse(append([]string{"--listen", ":8092"}, args...)))
		return &cfg
	}
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	off := parse()
	require.NoError(t, off.Validate())
	assert.False(t, anonymousRead(*off, log), "off by default")
	assert.Empty(t, logged.String())

	on := parse("--anonymous", "read")
	require.NoError(t, on.Validate())
	assert.True(t, anonymousRead(*on, log))
	assert.Contains(t, logged.String(), "level=WARN")

	assert.ErrorContains(t, parse("--anonymous", "write").Validate(), "--anonymous must be empty or read")
	assert.ErrorContains(t, parse("--identity", "kubeconfig", "--listen", "127.0.0.1:8092", "--anonymous", "read").Validate(), "local mode always names you")
}

func TestSetupRefusesAnInvalidConfigBeforeItStartsAnything(t *testing.T) {
	// A nil manager: Setup must return Validate's reasons before it touches one.
	err := Setup(nil, Config{Listen: "8092", Identity: "admin"})
	assert.ErrorContains(t, err, "host:port")
	assert.ErrorContains(t, err, "kubeconfig, proxy, oidc or none")
}

func TestAddFlagsStartsFromDefaults(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	cfg := Config{Listen: "stale:1", ProxySocket: "/stale.sock"}
	cfg.AddFlags(flag.NewFlagSet("test", flag.ContinueOnError))
	assert.Equal(t, Defaults(), cfg, "manager.Main starts from a zero Config; nothing from before survives")
}

func TestOIDCModeValidationNamesEveryProblem(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
	parse := func(args ...string) *Config {
		var cfg Config
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		cfg.AddFlags(fs)
		require.NoError(t, fs.Parse(append([]string{"--listen", ":8092", "--identity", "oidc"}, args...)))
		return &cfg
	}
	good := parse("--oidc-issuer-url", "https://idp.example.com", "--oidc-client-id", "sluice-ui",
		"--oidc-client-secret-file", "/etc/sluice-ui/oidc/client-secret", "--oidc-redirect-url", "https://sluice.example.com/oidc/callback")
	require.NoError(t, good.Validate())
	assert.Equal(t, "sub", good.OIDC.UsernameClaim, "the API server's default claim")
	assert.Equal(t, "groups", good.OIDC.GroupsClaim)
	loopback := parse("--oidc-issuer-url", "http://127.0.0.1:5556", "--oidc-client-id", "ui",
		"--oidc-client-secret-file", "/s", "--oidc-redirect-url", "http://localhost:8092/oidc/callback")
	require.NoError(t, loopback.Validate(), "a test's provider on loopback may use http")

	err := parse("--oidc-issuer-url", "http://idp.example.com", "--oidc-redirect-url", "/oidc/callback",
		"--oidc-session-ttl", "24h", "--oidc-scopes", "profile").Validate()
	require.Error(t, err)
	for _, problem := range []string{`--oidc-issuer-url "http://idp.example.com" must be https`, `--oidc-redirect-url "/oidc/callback" is not an absolute URL`,
		"needs --oidc-client-id", "needs --oidc-client-secret-file", "at most --oidc-session-max-age", "must include openid"} {
		assert.ErrorContains(t, err, problem)
	}
	assert.ErrorContains(t, parse("--proxy-socket", "/run/ui.sock").Validate(), "for --identity=proxy only, not oidc")
}

func TestProxyModeWithAnIssuerNeedsTheProxysClientIDAndNoTrustedAddress(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
	var cfg Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	cfg.AddFlags(fs)
	require.NoError(t, fs.Parse([]string{"--listen", ":8092", "--identity", "proxy", "--oidc-issuer-url", "https://idp.example.com"}))
	err := cfg.Validate()
	assert.ErrorContains(t, err, "needs --oidc-client-id: the proxy's client ID")
	assert.NotContains(t, err.Error(), "--proxy-socket", "a verified token needs no trusted source")
	cfg.OIDC.ClientID = "oauth2-proxy"
	require.NoError(t, cfg.Validate())
}
