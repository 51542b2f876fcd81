package suite

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	"github.com/sluicehq/sluice/e2e/harness"
	"github.com/sluicehq/sluice/e2e/node"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/charts"
)

// Cluster is the node with its clients, helm, and the images it runs.
type Cluster struct {
	Root    string
	Node    *node.Node
	Images  harness.Images
	Config  *rest.Config
	Kube    kubernetes.Interface
	Sluice  sluice.Interface
	Dynamic dynamic.Interface
	Helm    *charts.Helm
	// Env is the node seen as a testenv.Env, for testenv's helpers (InstallCRDPaths).
	Env *testenv.Env
}

func newCluster(root string, n *node.Node, images harness.Images) (*Cluster, error) {
	cfg, err := n.AdminConfig()
	if err != nil {
		return nil, err
	}
	c := &Cluster{Root: root, Node: n, Images: images, Config: cfg, Env: &testenv.Env{Config: cfg}}
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Sluice, err = sluice.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	// helm through testenv's version proxy: the API server built from its Go module reports
	// v0.0.0-master, which the charts' kubeVersion refuses; everything else goes to the node.
	if c.Helm, err = charts.NewHelm(c.Env); err != nil {
		return nil, err
	}
	if err := harness.BuildHostBinaries(root, n.Paths, "e2e-dial"); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Cluster) close() { _ = c.Helm.Close() }

// chart is the folder of a chart of this repository.
func (c *Cluster) chart(name string) string { return filepath.Join(c.Root, "charts", name) }

// controllers are the controller charts, each named after its image.
var controllers = []string{"gate-controller", "health-controller", "commitstatus-controller", "promoter-controller", "rollback-controller"}

// imageValues make a controller chart run the imported image: the tag `make images` stamped,
// never pulled. prefix is "" for a controller's own chart, "<chart>." inside the umbrella chart.
func (c *Cluster) imageValues(prefix, tag string) []string {
	return []string{prefix + "image.tag=" + tag, prefix + "image.pullPolicy=Never"}
}

// helmWait runs a helm command that waits for every workload to be Ready, and returns how long
// it took.
func (c *Cluster) helmWait(t *testing.T, args ...string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	out, err := c.Helm.Run(ctx, append(args, "--wait", "--timeout", "4m")...)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%v\n%s", err, c.diagnose(args))
	}
	t.Logf("helm %s: %s", args[0], strings.TrimSpace(firstLines(out, 3)))
	return took
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// figures are the durations the suite measures, printed at the end for docs/benchmarks.md.
var figures = &figureList{}

type figureList struct {
	mu    sync.Mutex
	items []string
}

func (f *figureList) add(what string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.items = append(f.items, fmt.Sprintf("%-84s %6.1fs", what, d.Seconds()))
}

func (f *figureList) print(w io.Writer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fmt.Fprintln(w, "figures (2 vCPU):")
	for _, item := range f.items {
		fmt.Fprintln(w, "  "+item)
	}
}
