package oidc

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/testenv"
)

// StartOAuth2Proxy runs the real oauth2-proxy (built by hack/tools/oauth2-proxy/build.sh) on a
// loopback port, signing people in at p as client and forwarding to upstream with their ID
// token in Authorization: Bearer (--pass-authorization-header), as docs/ui.md sets it up. It
// returns the proxy's URL; the client must accept http://127.0.0.1:*/oauth2/callback.
func StartOAuth2Proxy(t testing.TB, p *Provider, client Client, upstream string) string {
	t.Helper()
	bin := oauth2ProxyBinary(t)
	dir := t.TempDir()
	secret := filepath.Join(dir, "client-secret")
	if err := os.WriteFile(secret, []byte(client.Secret), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	base := "http://" + addr
	cookieSecret := make([]byte, 16)
	_, _ = rand.Read(cookieSecret)
	var out testenv.SyncBuffer
	cmd := exec.Command(bin, "--provider=oidc", "--oidc-issuer-url="+p.Issuer, "--client-id="+client.ID,
		"--client-secret-file="+secret, "--cookie-secret="+hex.EncodeToString(cookieSecret), "--cookie-secure=false",
		"--email-domain=*", "--upstream="+upstream, "--http-address="+addr, "--redirect-url="+base+"/oauth2/callback",
		"--pass-authorization-header=true", "--skip-provider-button=true", "--code-challenge-method=S256",
		"--scope=openid profile email groups", "--oidc-groups-claim=groups")
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("oauth2-proxy output:\n%s", testenv.Tail(out.Bytes(), 40))
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	testenv.WaitFor(t, time.Minute, func() (bool, error) {
		select {
		case <-exited:
			return false, fmt.Errorf("oauth2-proxy exited:\n%s", testenv.Tail(out.Bytes(), 20))
		default:
		}
		resp, err := http.Get(base + "/ping")
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}, "oauth2-proxy answers /ping")
	return base
}

// freeLoopbackAddr is a loopback address no one listens on now; oauth2-proxy takes no port 0.
func freeLoopbackAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func oauth2ProxyBinary(t testing.TB) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "hack", "tools", "oauth2-proxy", "build.sh")
	var stderr bytes.Buffer
	cmd := exec.Command("bash", script)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("building oauth2-proxy with %s: %v\n%s", script, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
