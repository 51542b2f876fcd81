package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterclient "github.com/sluicehq/sluice/api/generated/clientset/versioned/typed/promoter/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
)

// firstByte requests url and returns the time to the first byte of the body, then reads the rest.
func firstByte(b *testing.B, url string) time.Duration {
	start := time.Now()
	resp, err := uiClient.Get(url)
	require.NoError(b, err)
	return readFirstByte(b, resp, start)
}

// readFirstByte returns the time from start to the first byte of resp's body, then reads the rest.
func readFirstByte(b *testing.B, resp *http.Response, start time.Time) time.Duration {
	defer resp.Body.Close()
	one := make([]byte, 1)
	_, err := io.ReadFull(resp.Body, one)
	require.NoError(b, err)
	ttfb := time.Since(start)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(b, err)
	require.Equal(b, http.StatusOK, resp.StatusCode)
	return ttfb
}

func runKubectl(b *testing.B, args ...string) *os.ProcessState {
	cmd := exec.Command(kubectl, append([]string{"--kubeconfig", env.Kubeconfig}, args...)...)
	cmd.Stdout = io.Discard
	require.NoError(b, cmd.Run())
	return cmd.ProcessState
}

func page(b *testing.B, path string, kubectlArgs ...string) {
	b.Run("sluice-ui", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			total += firstByte(b, uiURL+path)
		}
		b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-first-byte/op")
	})
	b.Run("kubectl-get", func(b *testing.B) {
		for b.Loop() {
			runKubectl(b, kubectlArgs...)
		}
	})
}

// BenchmarkPipelineList: the list of 1,000 strategies, beside kubectl get of the same objects.
func BenchmarkPipelineList(b *testing.B) {
	page(b, "/pipelines", "get", "promotionstrategies", "--all-namespaces")
}

// BenchmarkStrategyPage: one strategy's page, beside kubectl get -o yaml of that strategy.
func BenchmarkStrategyPage(b *testing.B) {
	page(b, "/pipelines/team-00/app-0500", "get", "promotionstrategy", "--namespace", "team-00", "app-0500", "-o", "yaml")
}

// BenchmarkStatusWriteToPage: from a status write to an open page having fetched itself again
// after the server's push, beside kubectl get --watch printing the same change.
func BenchmarkStatusWriteToPage(b *testing.B) {
	ctx := context.Background()
	client := env.Sluice.PromoterV1alpha1().PromotionStrategies("team-01")
	n := 0
	write := func() {
		n++
		_, err := testenv.Update(ctx, statusClient{client}, "app-0001", func(p *promoterv1alpha1.PromotionStrategy) {
			p.Status.Environments[0].Blocked = "write " + strconv.Itoa(n)
		})
		require.NoError(b, err)
	}
	b.Run("sluice-ui", func(b *testing.B) {
		resp, err := uiClient.Get(uiURL + "/events")
		require.NoError(b, err)
		defer resp.Body.Close()
		events := bufio.NewScanner(resp.Body)
		for b.Loop() {
			write()
			for events.Scan() {
				if line := events.Text(); strings.HasPrefix(line, "data:") && strings.Contains(line, "PromotionStrategy") {
					break
				}
			}
			body, err := get(uiURL + "/pipelines/team-01/app-0001")
			require.NoError(b, err)
			require.Contains(b, body, fmt.Sprintf("write %d", n))
		}
	})
	b.Run("kubectl-get-watch", func(b *testing.B) {
		cmd := exec.Command(kubectl, "--kubeconfig", env.Kubeconfig, "get", "promotionstrategy", "--namespace", "team-01", "app-0001",
			"--watch", "-o", "jsonpath={.status.environments[0].blocked}{\"\\n\"}")
		out, err := cmd.StdoutPipe()
		require.NoError(b, err)
		require.NoError(b, cmd.Start())
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		lines := bufio.NewScanner(out)
		require.True(b, lines.Scan(), "kubectl prints the object once first")
		for b.Loop() {
			write()
			want := fmt.Sprintf("write %d", n)
			for lines.Scan() && lines.Text() != want {
			}
		}
	})
}

// BenchmarkServerMemory reports the UI's resident memory with every object cached, after it
// served each page, beside the peak of kubectl listing the same three kinds.
func BenchmarkServerMemory(b *testing.B) {
	for b.Loop() {
		for _, path := range []string{"/pipelines", "/gates", "/health", "/pipelines/team-00/app-0500"} {
			_, err := get(uiURL + path)
			require.NoError(b, err)
		}
	}
	b.ReportMetric(statusKiB(b, ui.Process.Pid, "VmRSS")/1024, "MiB-rss-sluice-ui")
	b.ReportMetric(statusKiB(b, ui.Process.Pid, "VmHWM")/1024, "MiB-peak-rss-sluice-ui")
	state := runKubectl(b, "get", "promotionstrategies,gates,healthchecks", "--all-namespaces")
	b.ReportMetric(float64(state.SysUsage().(*syscall.Rusage).Maxrss)/1024, "MiB-peak-rss-kubectl-get")
}

func statusKiB(b *testing.B, pid int, field string) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(b, err)
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kib, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			require.NoError(b, err)
			return kib
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// statusClient writes through the status subresource, as the promoter does.
type statusClient struct {
	c promoterclient.PromotionStrategyInterface
}

func (s statusClient) Get(ctx context.Context, name string, o metav1.GetOptions) (*promoterv1alpha1.PromotionStrategy, error) {
	return s.c.Get(ctx, name, o)
}

func (s statusClient) Update(ctx context.Context, p *promoterv1alpha1.PromotionStrategy, o metav1.UpdateOptions) (*promoterv1alpha1.PromotionStrategy, error) {
	return s.c.UpdateStatus(ctx, p, o)
}
