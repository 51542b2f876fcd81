package flux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/testenv"
)

// ControllersVersion is the release of source-controller and kustomize-controller that
// hack/tools/flux/build.sh builds, the same as the CRDs this package installs.
const ControllersVersion = "v1.9.6"

// SystemNamespace is where Flux runs in a cluster, and the namespace the controllers are told
// they run in when they watch every namespace.
const SystemNamespace = "flux-system"

const (
	// readyTimeout bounds a controller's start: a healthy one answers /readyz within seconds.
	readyTimeout = 2 * time.Minute
	// stopTimeout is how long a controller may shut down gracefully before it is killed.
	stopTimeout  = 10 * time.Second
	logTailLines = 60
)

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// ControllerBinaries returns the folder holding source-controller and kustomize-controller,
// building them with hack/tools/flux/build.sh on first use on this machine (about 7 minutes on 2
// cores; the script locks the folder, so parallel test packages build once).
func ControllerBinaries() (string, error) {
	binOnce.Do(func() {
		root, err := testenv.RepoRoot()
		if err != nil {
			binErr = err
			return
		}
		var stderr bytes.Buffer
		cmd := exec.Command("bash", filepath.Join(root, "hack", "tools", "flux", "build.sh"))
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			binErr = fmt.Errorf("build the Flux controllers with hack/tools/flux/build.sh: %w\n%s", err, stderr.String())
			return
		}
		binDir = strings.TrimSpace(string(out))
	})
	return binDir, binErr
}

// Options configure the controllers Start runs.
type Options struct {
	// Namespace limits both controllers to one namespace, which they are told is theirs, so tests
	// of one package each run their own Flux without one reconciling another's objects. Empty
	// means every namespace, with flux-system as their own, as a cluster's Flux runs.
	Namespace string
}

// Controllers are source-controller and kustomize-controller running as processes beside the
// local control plane. They use the env's admin kubeconfig and need no DNS and no pods: the
// artifact server listens on loopback, and kustomize-controller downloads from it there.
type Controllers struct {
	// ArtifactAddr is source-controller's artifact server, host:port on 127.0.0.1.
	ArtifactAddr string
	procs        []*process
}

// Start runs both controllers for the rest of the test and stops them when it ends; if the test
// failed, it logs the tail of each controller's output first. The first call on a machine builds
// them (see ControllerBinaries).
func Start(t testing.TB, env *testenv.Env, opts Options) *Controllers {
	t.Helper()
	c, err := StartControllers(t.Context(), env, opts, t.TempDir())
	if c != nil {
		t.Cleanup(func() {
			if t.Failed() {
				for _, p := range c.procs {
					t.Logf("%s output (last %d lines):\n%s", p.name, logTailLines, p.logTail())
				}
			}
			if err := c.Stop(); err != nil {
				t.Errorf("stopping the Flux controllers: %v", err)
			}
		})
	}
	if err != nil {
		t.Fatalf("starting the Flux controllers: %v", err)
	}
	return c
}

// StartControllers runs both controllers with their files (logs, artifacts) in dir until Stop.
// On error the controllers already started are returned too, so their logs can be shown.
func StartControllers(ctx context.Context, env *testenv.Env, opts Options, dir string) (*Controllers, error) {
	bin, err := ControllerBinaries()
	if err != nil {
		return nil, err
	}
	ns := opts.Namespace
	if ns == "" {
		ns = SystemNamespace
	}
	if err := ensureNamespace(ctx, env, ns); err != nil {
		return nil, err
	}
	storagePort, err := freePort()
	if err != nil {
		return nil, err
	}
	c := &Controllers{ArtifactAddr: fmt.Sprintf("127.0.0.1:%d", storagePort)}
	storage := filepath.Join(dir, "artifacts")
	if err := os.MkdirAll(storage, 0o700); err != nil {
		return nil, err
	}
	runs := []struct {
		name  string
		extra []string
	}{
		{"source-controller", []string{"--storage-path=" + storage,
			"--storage-addr=" + c.ArtifactAddr, "--storage-adv-addr=" + c.ArtifactAddr}},
		// A Kustomization whose source has no artifact yet is retried after this, 30s by default.
		{"kustomize-controller", []string{"--requeue-dependency=2s"}},
	}
	for _, r := range runs {
		p, err := startProcess(filepath.Join(bin, r.name), r.name, dir, env.Kubeconfig, ns, opts.Namespace == "", r.extra)
		if p != nil {
			c.procs = append(c.procs, p)
		}
		if err != nil {
			return c, err
		}
	}
	for _, p := range c.procs {
		if err := p.waitReady(ctx); err != nil {
			return c, err
		}
	}
	return c, nil
}

// Stop stops both controllers: SIGTERM, then SIGKILL after a grace period. It may be called more
// than once.
func (c *Controllers) Stop() error {
	var errs []error
	for _, p := range c.procs {
		errs = append(errs, p.stop())
	}
	return errors.Join(errs...)
}

// Logs returns everything the named controller ("source-controller" or "kustomize-controller")
// wrote so far, for a test that reads what the controller did.
func (c *Controllers) Logs(name string) string {
	for _, p := range c.procs {
		if p.name == name {
			b, _ := os.ReadFile(p.logPath)
			return string(b)
		}
	}
	return ""
}

func ensureNamespace(ctx context.Context, env *testenv.Env, name string) error {
	_, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s for the Flux controllers: %w", name, err)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls the controller's /readyz until it answers 200, or the process exits.
func (p *process) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	url := "http://" + p.healthAddr + "/readyz"
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited while starting: %v\n%s", p.name, p.waitErr, p.logTail())
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s: %w\n%s", p.name, url, ctx.Err(), p.logTail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// process is one running controller and its log file.
type process struct {
	name, logPath, healthAddr string
	cmd                       *exec.Cmd
	exited                    chan struct{}
	waitErr                   error
	stopOnce                  sync.Once
}

// startProcess runs a controller against the kubeconfig, in its own process group, killed with
// the test process (Pdeathsig) so a test binary that dies of its -timeout leaves none behind.
func startProcess(binary, name, dir, kubeconfig, namespace string, allNamespaces bool, extra []string) (*process, error) {
	metrics, err := freePort()
	if err != nil {
		return nil, err
	}
	health, err := freePort()
	if err != nil {
		return nil, err
	}
	p := &process{name: name, logPath: filepath.Join(dir, name+".log"),
		healthAddr: fmt.Sprintf("127.0.0.1:%d", health), exited: make(chan struct{})}
	logFile, err := os.OpenFile(p.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	args := append([]string{
		"--enable-leader-election=false",
		fmt.Sprintf("--watch-all-namespaces=%t", allNamespaces),
		fmt.Sprintf("--metrics-addr=127.0.0.1:%d", metrics),
		"--health-addr=" + p.healthAddr,
	}, extra...)
	p.cmd = exec.Command(binary, args...)
	p.cmd.Dir = dir
	// There is no --kubeconfig flag: controller-runtime reads KUBECONFIG. RUNTIME_NAMESPACE is the
	// namespace the controller believes it runs in, and the one it watches when not all are.
	p.cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"TMPDIR=" + os.TempDir(),
		"KUBECONFIG=" + kubeconfig,
		"RUNTIME_NAMESPACE=" + namespace,
	}
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

func (p *process) stop() error {
	var err error
	p.stopOnce.Do(func() {
		pgid := p.cmd.Process.Pid
		defer func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }()
		if e := p.cmd.Process.Signal(syscall.SIGTERM); e != nil && !errors.Is(e, os.ErrProcessDone) {
			err = fmt.Errorf("signal %s: %w", p.name, e)
		}
		select {
		case <-p.exited:
		case <-time.After(stopTimeout):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.exited
		}
	})
	return err
}

func (p *process) logTail() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	return testenv.Tail(b, logTailLines)
}
