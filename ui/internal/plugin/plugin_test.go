package plugin

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{}, &env) }

// kubectl sluice ui serves the pipelines of the kubeconfig's cluster on loopback, prints the URL,
// opens it with $BROWSER, and stops cleanly on Ctrl-C (its context ending).
func TestUIServesTheKubeconfigsClusterAndOpensTheBrowser(t *testing.T) {
	testenv.SkipIfShort(t)
	ctx := context.Background()
	ns := "plugin-ui"
	_, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Sluice.PromoterV1alpha1().PromotionStrategies(ns).Create(ctx, &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: promoterv1alpha1.PromotionStrategySpec{
			RepositoryRef: promoterv1alpha1.LocalReference{Name: "web-deploy"}, DryBranch: "main",
			Environments: []promoterv1alpha1.Environment{{Branch: "dev"}, {Branch: "prod"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, testenv.WriteKubeconfig(env.Config, kubeconfig))
	// The browser: a script that writes down the URL it was asked to open.
	opened := filepath.Join(dir, "opened")
	browser := filepath.Join(dir, "browser")
	require.NoError(t, os.WriteFile(browser, []byte("#!/bin/sh\nprintf '%s' \"$1\" > "+opened+".tmp && mv "+opened+".tmp "+opened+"\n"), 0o755))
	t.Setenv("BROWSER", browser)
	t.Setenv("KUBECONFIG", filepath.Join(dir, "no-such-kubeconfig"))

	runCtx, stop := context.WithCancel(ctx)
	var stdout, stderr testenv.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(runCtx, []string{"ui", "--kubeconfig", kubeconfig, "--listen", "127.0.0.1:0", "-n", ns}, &stdout, &stderr)
	}()
	var url string
	testenv.WaitFor(t, 30*time.Second, func() (bool, error) {
		b, err := os.ReadFile(opened)
		url = string(b)
		return err == nil, nil
	}, "the browser is asked to open the UI (stderr: %s)", &stderr)
	assert.True(t, strings.HasPrefix(url, "http://127.0.0.1:"), "a loopback URL: %s", url)
	assert.Contains(t, stdout.String(), url, "the URL is printed too")

	require.Contains(t, url, "/?token=", "the URL carries the launch token")
	base, _, _ := strings.Cut(url, "?")
	resp, err := http.Get(base + "pipelines")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "without the token, nobody gets in")

	// The browser trades the token for a cookie and lands on the pipelines.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	client := &http.Client{Jar: jar}
	var page string
	testenv.WaitFor(t, 30*time.Second, func() (bool, error) {
		resp, err := client.Get(url)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		page = string(b)
		return err == nil && resp.StatusCode == http.StatusOK && strings.Contains(page, `href="/pipelines/`+ns+`/web"`), err
	}, "the UI lists the strategy of the kubeconfig's cluster")

	stop()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, "Ctrl-C stops it cleanly (stderr: %s)", stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("kubectl sluice ui did not stop when its context ended")
	}
}

// Bad usage is refused with a message and exit code 2, before anything is started; a listen
// address another machine could reach is refused, since every request acts as the user.
func TestUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{nil, 2, "Commands:"},
		{[]string{"dashboard"}, 2, `unknown command "dashboard"`},
		{[]string{"help"}, 0, "kubectl sluice ui --help"},
		{[]string{"ui", "--listen", "0.0.0.0:8092"}, 2, "loopback address only"},
		{[]string{"ui", "--listen", "192.0.2.1:8092"}, 2, "loopback address only"},
		{[]string{"ui", "--listen", "8092"}, 2, "not host:port"},
		{[]string{"ui", "extra"}, 2, "unexpected arguments"},
		{[]string{"ui", "--service", "sluice-ui"}, 2, "use it with --port-forward"},
		{[]string{"ui", "--port-forward", "--listen", "0.0.0.0:8092"}, 2, "loopback address only"},
		{[]string{"ui", "--help"}, 0, "-port-forward"},
	} {
		var out bytes.Buffer
		code := Main(context.Background(), c.args, &out, &out)
		assert.Equal(t, c.code, code, "%v: %s", c.args, out.String())
		assert.Contains(t, out.String(), c.says, "%v", c.args)
	}
	for _, listen := range []string{"127.0.0.1:0", "[::1]:8092", "localhost:8092"} {
		assert.NoError(t, checkLoopback(listen), listen)
	}
}
