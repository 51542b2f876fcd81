package images

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/charts"
)

var controllers = []string{"gate-controller", "health-controller", "promoter-controller", "commitstatus-controller", "rollback-controller"}

const namespace = "sluice-system"

// Each controller's binary, unpacked from its image, runs with its chart's arguments under its
// chart's ServiceAccount (by impersonation, so only the chart's RBAC applies), becomes ready,
// takes its Lease, and stops cleanly on SIGTERM.
func TestImagesRunUnderTheirChartsServiceAccount(t *testing.T) {
	out := build(t)
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	helm, err := charts.NewHelm(env)
	require.NoError(t, err)
	t.Cleanup(func() { _ = helm.Close() })
	for _, name := range controllers {
		// The test environment installed the CRDs: the charts must not own them too.
		require.NoError(t, helm.Install(ctx, name, namespace, filepath.Join(root, "charts", name), "crds.enabled=false"))
	}
	for _, name := range controllers {
		t.Run(name, func(t *testing.T) {
			deploy, err := env.Kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			pod := deploy.Spec.Template.Spec
			container := pod.Containers[0]
			e := out.entry(t, name)
			assert.Equal(t, repository(e.Ref), repository(container.Image), "the chart pulls the image the builder names")
			require.NotNil(t, pod.SecurityContext.RunAsUser)
			assert.Equal(t, int64(65532), *pod.SecurityContext.RunAsUser, "the chart runs the image's user")

			bin := unpackBinary(t, out, e, runtime.GOARCH)
			version, err := exec.Command(bin, "--version").Output()
			require.NoError(t, err)
			assert.Contains(t, string(version), name+" "+out.Version+" ("+out.Revision)

			kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
			require.NoError(t, testenv.WriteKubeconfig(env.Impersonate(namespace, pod.ServiceAccountName), kubeconfig))
			args := append(chartArgs(t, container),
				"--kubeconfig="+kubeconfig, "--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=127.0.0.1:0")
			proc := startProcess(t, bin, args, "POD_NAMESPACE="+namespace)
			probes := proc.listeningOn(t)
			require.NoError(t, testenv.Wait(ctx, 2*time.Minute, func(context.Context) (bool, error) {
				return readyz(probes)
			}), "/readyz answers 200 under the chart's RBAC; output:\n%s", proc.output.String())
			if lease := leaseName(name, args); lease != "" {
				require.NoError(t, testenv.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
					l, err := env.Kube.CoordinationV1().Leases(namespace).Get(ctx, lease, metav1.GetOptions{})
					return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", nil
				}), "the controller holds Lease %s; output:\n%s", lease, proc.output.String())
			}
			assert.NoError(t, proc.stop(), "exits 0 on SIGTERM; output:\n%s", proc.output.String())
		})
	}
}

func repository(ref string) string {
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i]
	}
	return ref
}

// unpackBinary extracts the one file of the image's layer for arch into a root folder and
// returns the binary's path there.
func unpackBinary(t *testing.T, out Output, e Entry, arch string) string {
	t.Helper()
	l := Layout(filepath.Join(out.Dir, e.Layout))
	top, err := l.Index()
	require.NoError(t, err)
	var idx Index
	require.NoError(t, l.JSON(top.Manifests[0], &idx))
	for _, d := range idx.Manifests {
		if d.Platform.Architecture != arch {
			continue
		}
		var m Manifest
		require.NoError(t, l.JSON(d, &m))
		layer, err := l.Blob(m.Layers[0])
		require.NoError(t, err)
		files, _, err := Layer(layer)
		require.NoError(t, err)
		require.Len(t, files, 1)
		rootfs := filepath.Join(t.TempDir(), "rootfs")
		path := filepath.Join(rootfs, filepath.Clean("/"+files[0].Header.Name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, files[0].Data, os.FileMode(files[0].Header.Mode)))
		return path
	}
	t.Fatalf("%s has no %s image", e.Name, arch)
	return ""
}

// chartArgs are the container's arguments as the chart rendered them, with each folder the chart
// mounts (a read-only root file system's writable places) moved to a temporary folder.
func chartArgs(t *testing.T, c corev1.Container) []string {
	t.Helper()
	args := append([]string(nil), c.Args...)
	for _, m := range c.VolumeMounts {
		dir := t.TempDir()
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, m.MountPath, dir)
		}
	}
	return args
}

// leaseName is the Lease the controller takes, or "" without leader election.
func leaseName(name string, args []string) string {
	lease := name + "-leader"
	elect := false
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--leader-election-id="); ok {
			lease = v
		}
		if a == "--leader-elect=true" || a == "--leader-elect" {
			elect = true
		}
		if a == "--leader-elect=false" {
			elect = false
		}
	}
	if !elect {
		return ""
	}
	return lease
}

func readyz(addr string) (bool, error) {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("/readyz answered %s", resp.Status)
	}
	return true, nil
}

// process is a controller run by a test, with its output kept for failure messages.
type process struct {
	cmd    *exec.Cmd
	output testenv.SyncBuffer
	done   chan error
}

// startProcess runs bin with only env as its environment, as in a container built from nothing.
func startProcess(t *testing.T, bin string, args []string, env ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), done: make(chan error, 1)}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = &p.output, &p.output
	require.NoError(t, p.cmd.Start())
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
		}
	})
	return p
}

// listeningOn returns the probe address from the controller's "listening" log line.
func (p *process) listeningOn(t *testing.T) string {
	t.Helper()
	var addr string
	err := testenv.Wait(context.Background(), time.Minute, func(context.Context) (bool, error) {
		select {
		case err := <-p.done:
			p.done <- err
			return false, fmt.Errorf("exited: %v", err)
		default:
		}
		for _, line := range strings.Split(p.output.String(), "\n") {
			var entry struct{ Msg, Probes string }
			if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "listening" {
				addr = entry.Probes
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "the controller logs where it listens; output:\n%s", p.output.String())
	return addr
}

func (p *process) stop() error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case err := <-p.done:
		return err
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		return errors.New("still running 30s after SIGTERM; killed")
	}
}
