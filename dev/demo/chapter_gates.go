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

// chapterNoDeployFriday: a closed window freezes production, a Flux Kustomization behind the
// gate is held with the reason on it, and a hotfix override opens the gate for an hour.
func chapterNoDeployFriday(ctx context.Context, s *Story) error {
	s.Step("Flux's CRDs are installed, taken from the fluxcd Go modules")
	paths, err := flux.CRDPaths()
	if err != nil {
		return err
	}
	if err := s.Env.InstallCRDPaths(paths...); err != nil {
		return err
	}
	s.Say("the gate-controller was already running: it starts holding Kustomizations and GitRepositories")
	s.Say("the moment their CRDs appear, without a restart")

	// The demo runs on any day: the freeze starts a minute ago, at this weekday and time in UTC,
	// standing in for Friday 18:00.
	start := time.Now().UTC().Add(-time.Minute)
	schedule := fmt.Sprintf("%d %d * * %s", start.Minute(), start.Hour(), strings.ToUpper(start.Weekday().String()[:3]))
	s.Step("the gate becomes No Deploy Friday: a closed window, Friday 18:00 to Monday 08:00")
	s.Say("in production the schedule is \"0 18 * * FRI\" in the team's time zone; this demo sets it")
	s.Say("to %q UTC, a minute ago, so the freeze is on now", schedule)
	if err := s.Apply(ctx, fmt.Sprintf(`
apiVersion: gating.sluice.dev/v1alpha1
kind: Gate
metadata:
  name: prod
spec:
  closed: false
  message: null
  windows:
    - description: No Deploy Friday
      kind: closed
      schedule: %q
      duration: 62h
      timeZone: UTC
`, schedule)); err != nil {
		return err
	}
	if err := s.waitGate(ctx, "prod", func(g *gatingv1alpha1.Gate) bool {
		return !g.Status.Open && g.Status.Reason == gatingv1alpha1.ReasonWindow
	}); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "get", "gate", "prod"); err != nil {
		return err
	}

	s.Step("a team's Flux objects wait for the gate through an annotation, since Flux's CRDs cannot change")
	if err := s.Apply(ctx, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: podinfo
  annotations:
    gating.sluice.dev/gates: prod
spec:
  interval: 5m
  url: https://github.com/stefanprodan/podinfo
  ref:
    branch: master
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: podinfo
  annotations:
    gating.sluice.dev/gates: prod
spec:
  interval: 10m
  path: ./kustomize
  prune: true
  sourceRef:
    kind: GitRepository
    name: podinfo
`); err != nil {
		return err
	}
	s.Say("the gate is closed, so the controller holds them: spec.suspend for Flux, and the reason in the annotation")
	if _, err := s.Kubectl(ctx, "wait", "--for=jsonpath={.spec.suspend}=true", "kustomization.kustomize.toolkit.fluxcd.io/podinfo", "gitrepository.source.toolkit.fluxcd.io/podinfo", "--timeout=60s"); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "get", "kustomization", "podinfo", "-o",
		`jsonpath={.metadata.annotations.reconcile\.fluxcd\.io/suspended}{"\n"}`); err != nil {
		return err
	}
	if err := s.waitGate(ctx, "prod", func(g *gatingv1alpha1.Gate) bool { return g.Status.Holding == 2 }); err != nil {
		return err
	}
	if _, err := s.kubectlGate(ctx, "list"); err != nil {
		return err
	}

	s.Step("Friday 19:30, an incident: a hotfix must ship, so the on-call opens the gate for an hour")
	if _, err := s.kubectlGate(ctx, "open", "prod", "--for", "1h", "-m", "hotfix for INC-4711"); err != nil {
		return err
	}
	s.Say("the held objects are released, exactly: what the controller set is removed, nothing else")
	if err := s.waitReleased(ctx, "podinfo"); err != nil {
		return err
	}
	if err := s.waitGate(ctx, "prod", func(g *gatingv1alpha1.Gate) bool { return g.Status.Holding == 0 }); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "get", "kustomization", "podinfo", "-o",
		`custom-columns=NAME:.metadata.name,SUSPENDED:.spec.suspend,REASON:.metadata.annotations.reconcile\.fluxcd\.io/suspended`); err != nil {
		return err
	}
	s.Say("in an hour the override expires, status reports it, and No Deploy Friday holds them again")
	if _, err := s.Kubectl(ctx, "get", "gate", "prod", "-o", "wide"); err != nil {
		return err
	}
	return approveOneRevision(ctx, s)
}

// approveOneRevision: a gate that stays closed lets one infrastructure revision through, and
// holds the next one until someone approves it too.
func approveOneRevision(ctx context.Context, s *Story) error {
	s.Step("infrastructure upgrades need sign-off: a closed gate approves one revision, and only it")
	if err := s.Apply(ctx, `
apiVersion: gating.sluice.dev/v1alpha1
kind: Gate
metadata:
  name: infra
spec:
  closed: true
  message: infrastructure upgrades need sign-off
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: infra
spec:
  interval: 5m
  url: https://github.com/example/infra
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: infra
  annotations:
    gating.sluice.dev/gates: infra
spec:
  interval: 10m
  path: ./clusters/prod
  prune: true
  sourceRef:
    kind: GitRepository
    name: infra
`); err != nil {
		return err
	}
	r1, r2 := "main@sha1:"+strings.Repeat("1a", 20), "main@sha1:"+strings.Repeat("2b", 20)
	s.Say("no Flux controller runs here, so the demo writes the GitRepository's artifact as source-controller would;")
	s.Say("the source is not gated: it goes on fetching, and the Kustomization waits for a sign-off")
	if err := s.fetched(ctx, "infra", r1); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "wait", "--for=jsonpath={.spec.suspend}=true", "kustomization.kustomize.toolkit.fluxcd.io/infra", "--timeout=60s"); err != nil {
		return err
	}
	s.Say("the platform lead approves exactly that revision; the plugin records who and when")
	if _, err := s.kubectlGate(ctx, "approve", "infra", "--revision", r1, "-m", "reviewed in PR #42"); err != nil {
		return err
	}
	if err := s.waitReleased(ctx, "infra"); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "get", "gate", "infra"); err != nil {
		return err
	}
	s.Say("a new commit lands: nobody approved it, so the Kustomization is held again, and says why")
	if err := s.fetched(ctx, "infra", r2); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "wait", "--for=jsonpath={.spec.suspend}=true", "kustomization.kustomize.toolkit.fluxcd.io/infra", "--timeout=60s"); err != nil {
		return err
	}
	_, err := s.Kubectl(ctx, "get", "kustomization", "infra", "-o",
		`jsonpath={.metadata.annotations.reconcile\.fluxcd\.io/suspended}{"\n"}`)
	return err
}

// fetched writes a GitRepository's status.artifact as source-controller does when it fetches.
func (s *Story) fetched(ctx context.Context, name, revision string) error {
	repos := s.Env.Dynamic.Resource(flux.GitRepositories).Namespace(s.Namespace)
	u, err := repos.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	artifact := map[string]any{
		"revision": revision, "digest": "sha256:" + strings.Repeat("0", 64),
		"path": "gitrepository/" + s.Namespace + "/" + name + ".tar.gz", "url": "http://source-controller/" + name + ".tar.gz",
		"lastUpdateTime": time.Now().UTC().Format(time.RFC3339),
	}
	if err := unstructured.SetNestedMap(u.Object, artifact, "status", "artifact"); err != nil {
		return err
	}
	_, err = repos.UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: "source-controller"})
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
