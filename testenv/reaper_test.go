package testenv

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const reaperChildEnv = "SLUICE_TESTENV_REAPER_CHILD"

// A test binary that dies without cleanup, as one past go test's -timeout does, takes its
// kube-apiserver and etcd with it.
func TestControlPlaneStopsWhenItsTestBinaryIsKilled(t *testing.T) {
	SkipIfShort(t)
	child := exec.Command(os.Args[0], "-test.run=^TestReaperChild$", "-test.count=1")
	child.Env = append(os.Environ(), reaperChildEnv+"=1")
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })

	var pids []int
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if rest, ok := strings.CutPrefix(lines.Text(), "control plane pids:"); ok {
			for _, f := range strings.Fields(rest) {
				pid, err := strconv.Atoi(f)
				require.NoError(t, err)
				pids = append(pids, pid)
			}
			break
		}
	}
	require.Len(t, pids, 2, "the child reports its kube-apiserver and etcd")

	require.NoError(t, child.Process.Kill())
	_ = child.Wait()
	err = Wait(context.Background(), time.Minute, func(context.Context) (bool, error) {
		for _, pid := range pids {
			if syscall.Kill(pid, 0) == nil && !zombie(pid) {
				return false, nil
			}
		}
		return true, nil
	})
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	require.NoError(t, err, "kube-apiserver and etcd outlived their test binary")
}

// TestReaperChild is the child of the test above: it starts a control plane, reports its
// processes and waits to be killed.
func TestReaperChild(t *testing.T) {
	if os.Getenv(reaperChildEnv) == "" {
		t.Skip("run by TestControlPlaneStopsWhenItsTestBinaryIsKilled")
	}
	env, err := Start(Options{WithoutSluiceCRDs: true})
	require.NoError(t, err)
	defer func() { _ = env.Stop() }()
	os.Stdout.WriteString("control plane pids: " + strings.Join(childProcesses(os.Getpid(), "kube-apiserver", "etcd"), " ") + "\n")
	time.Sleep(5 * time.Minute)
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] == "Z"
}
