// Package charts lints, renders and installs the Sluice Helm charts into the local control plane
// with a helm binary built from its Go module, and checks what a chart's ServiceAccount may do.
package charts

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/testenv"
)

// Helm runs helm against one control plane with its own, throwaway helm home.
type Helm struct {
	bin        string
	kubeconfig string
	home       string
	proxy      *versionProxy
}

// NewHelm returns a Helm for env, or for rendering and linting only when env has no control
// plane. Call Close to stop its proxy and remove its home folder.
func NewHelm(env *testenv.Env) (*Helm, error) {
	bin, err := testenv.Tool("helm")
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "sluice-helm-")
	if err != nil {
		return nil, err
	}
	h := &Helm{bin: bin, home: home}
	if env.Config == nil {
		return h, nil
	}
	if h.proxy, err = startVersionProxy(env.Config); err != nil {
		_ = os.RemoveAll(home)
		return nil, err
	}
	h.kubeconfig = filepath.Join(home, "kubeconfig")
	if err := testenv.WriteKubeconfig(&rest.Config{Host: h.proxy.URL}, h.kubeconfig); err != nil {
		_ = h.Close()
		return nil, err
	}
	return h, nil
}

// Close stops the proxy and removes helm's home folder.
func (h *Helm) Close() error {
	if h.proxy != nil {
		_ = h.proxy.Close()
	}
	return os.RemoveAll(h.home)
}

// Run runs helm with args and returns its combined output.
func (h *Helm) Run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+h.kubeconfig,
		"HELM_CACHE_HOME="+filepath.Join(h.home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(h.home, "config"),
		"HELM_DATA_HOME="+filepath.Join(h.home, "data"),
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %v: %w\n%s", args, err, out.String())
	}
	return out.String(), nil
}

// Lint runs `helm lint --strict`, which also validates values against values.schema.json.
func (h *Helm) Lint(ctx context.Context, chart string, set ...string) error {
	_, err := h.LintOutput(ctx, chart, set...)
	return err
}

// LintOutput is Lint with helm's output, which names a value the schema refuses (the error also
// repeats the arguments, so test a refusal on the output).
func (h *Helm) LintOutput(ctx context.Context, chart string, set ...string) (string, error) {
	return h.Run(ctx, append([]string{"lint", "--strict", chart, "--kube-version", KubeVersion}, setArgs(set)...)...)
}

// Install installs chart as release into namespace, creating the namespace.
func (h *Helm) Install(ctx context.Context, release, namespace, chart string, set ...string) error {
	return h.InstallWith(ctx, release, namespace, chart, nil, set...)
}

// InstallWith is Install with extra flags (such as --values FILE) before the values in set.
func (h *Helm) InstallWith(ctx context.Context, release, namespace, chart string, extra []string, set ...string) error {
	args := append([]string{"install", release, chart, "--namespace", namespace, "--create-namespace"}, extra...)
	_, err := h.Run(ctx, append(args, setArgs(set)...)...)
	return err
}

// Upgrade upgrades release to chart with the values in set (the chart's defaults otherwise).
func (h *Helm) Upgrade(ctx context.Context, release, namespace, chart string, set ...string) error {
	args := []string{"upgrade", release, chart, "--namespace", namespace}
	_, err := h.Run(ctx, append(args, setArgs(set)...)...)
	return err
}

// Uninstall removes release. Resources marked helm.sh/resource-policy: keep stay.
func (h *Helm) Uninstall(ctx context.Context, release, namespace string) error {
	_, err := h.Run(ctx, "uninstall", release, "--namespace", namespace, "--wait")
	return err
}

// KubeVersion is the Kubernetes version `helm template` renders for: the local control plane's.
// A helm built from its Go module without release ldflags would otherwise assume v1.20.
const KubeVersion = "1.36.3"

// Template renders chart as release in namespace, with extra flags (such as --api-versions)
// before the values in set.
func (h *Helm) Template(ctx context.Context, release, namespace, chart string, extra []string, set ...string) (string, error) {
	args := append([]string{"template", release, chart, "--namespace", namespace, "--kube-version", KubeVersion}, extra...)
	return h.Run(ctx, append(args, setArgs(set)...)...)
}

// DependencyBuild packages the file:// dependencies of the umbrella chart into its charts/
// folder, without network: --skip-refresh leaves helm's repository indexes alone.
func (h *Helm) DependencyBuild(ctx context.Context, chart string) error {
	_, err := h.Run(ctx, "dependency", "build", "--skip-refresh", chart)
	return err
}

func setArgs(set []string) []string {
	var args []string
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return args
}

// Controllers returns the folder of every controller chart (charts/*-controller), sorted.
func Controllers() ([]string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	matches, err := filepath.Glob(filepath.Join(root, "charts", "*-controller", "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, m := range matches {
		dirs = append(dirs, filepath.Dir(m))
	}
	sort.Strings(dirs)
	return dirs, nil
}

// UI returns the folder of the web UI's chart, charts/ui: built by the same tooling as the
// controller charts (make generate), owning no CRD, with no Lease.
func UI() (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "charts", "ui"), nil
}

// Charts returns the folder of every chart built from hack/chart-common: the controller charts,
// then the UI's.
func Charts() ([]string, error) {
	dirs, err := Controllers()
	if err != nil {
		return nil, err
	}
	ui, err := UI()
	if err != nil {
		return nil, err
	}
	return append(dirs, ui), nil
}

// Image returns the image a chart's Deployment runs: the controller's own name, sluice-ui for
// the UI's chart.
func Image(chart string) string {
	if chart == "ui" {
		return "sluice-ui"
	}
	return chart
}

// Umbrella returns the folder of the sluice chart, which installs every controller chart.
func Umbrella() (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "charts", "sluice"), nil
}

// Can asks the API server whether the client's user may perform verb on resource. With an
// impersonating client (testenv.Env.Impersonate) it answers for a chart's ServiceAccount.
func Can(ctx context.Context, client kubernetes.Interface, attrs authorizationv1.ResourceAttributes) (bool, error) {
	review, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return review.Status.Allowed, nil
}
