package demo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

func chapterFirstGate(ctx context.Context, s *Story) error {
	s.Step("the Sluice CRDs are installed and grouped under the `sluice` category")
	if _, err := s.Kubectl(ctx, "get", "crds", "-o", "custom-columns=NAME:.metadata.name,KIND:.spec.names.kind,SHORT:.spec.names.shortNames"); err != nil {
		return err
	}

	s.Step("a platform team creates a Gate for production, closed by hand")
	if err := s.Apply(ctx, `
apiVersion: gating.sluice.dev/v1alpha1
kind: Gate
metadata:
  name: prod
spec:
  closed: true
  message: release 1.4 sign-off pending
`); err != nil {
		return err
	}
	s.Say("the gate-controller evaluates it: `kubectl wait --for=condition=Ready` works on every Sluice kind")
	if _, err := s.Kubectl(ctx, "wait", "--for=condition=Ready", "gate/prod", "--timeout=60s"); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "get", "sluice"); err != nil {
		return err
	}
	s.Step("kubectl explain documents every field from the CRD")
	_, err := s.Kubectl(ctx, "explain", "gate.spec.closed")
	return err
}

// waitGate waits until the gate's current spec has been evaluated and cond holds.
func (s *Story) waitGate(ctx context.Context, name string, cond func(*gatingv1alpha1.Gate) bool) error {
	var last *gatingv1alpha1.Gate
	err := testenv.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		g, err := s.Env.Sluice.GatingV1alpha1().Gates(s.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = g
		return g.Status.ObservedGeneration == g.Generation && cond(g), nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("gate %s: %w (status: open %t, reason %s: %s)", name, err, last.Status.Open, last.Status.Reason, last.Status.Message)
	}
	return err
}

// waitReleased waits until the Kustomization carries neither spec.suspend nor a suspend reason.
func (s *Story) waitReleased(ctx context.Context, name string) error {
	return testenv.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		u, err := s.Env.Dynamic.Resource(flux.Kustomizations).Namespace(s.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, suspended, _ := unstructured.NestedBool(u.Object, "spec", "suspend")
		_, reason := u.GetAnnotations()["reconcile.fluxcd.io/suspended"]
		return !suspended && !reason, nil
	})
}

// kubectlGate runs `kubectl sluice gate ...`: kubectl finds the kubectl-sluice plugin on PATH.
// The plugin comes from bin/ (`make build`), or is built for the demo when it is not there.
func (s *Story) kubectlGate(ctx context.Context, args ...string) (string, error) {
	dir, err := pluginDir(ctx)
	if err != nil {
		return "", err
	}
	args = append([]string{"sluice", "gate", "--namespace", s.Namespace}, args...)
	cmd := exec.CommandContext(ctx, s.kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.Env.Kubeconfig, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = a
		if strings.ContainsAny(a, " \"'") {
			shown[i] = strconv.Quote(a)
		}
	}
	fmt.Fprintf(s.out, "           $ kubectl %s\n", strings.Join(shown, " "))
	for _, line := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		fmt.Fprintf(s.out, "           %s\n", line)
	}
	if err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

func pluginDir(ctx context.Context) (string, error) {
	bin, err := BinDirFromRepo()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(bin, "kubectl-sluice")); err == nil {
		return bin, nil
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, ".cache", "demo-bin")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(os.PathSeparator), "./ui/cmd/kubectl-sluice")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("bin/kubectl-sluice is missing and building it failed: %w\n%s", err, out)
	}
	return dir, nil
}
