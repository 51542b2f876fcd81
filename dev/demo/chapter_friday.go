package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/testenv/flux"
)

// friday is chapter 2: real Flux starts beside the control plane, a closed window freezes
// production, the real Kustomization behind the gate is held with the reason on it and applies
// nothing, and a hotfix override opens the gate for an hour, so kustomize-controller applies.
type friday struct {
	s *Story
	// v1 is the commit the frontend's repository holds.
	v1 string
}

func chapterNoDeployFriday(ctx context.Context, s *Story) error {
	f := &friday{s: s}
	return runSteps(ctx, f.startFlux, f.freezeForTheWeekend, f.deployDuringTheFreeze, f.hotfix,
		func(ctx context.Context) error { return approveOneRevision(ctx, s) })
}

func (f *friday) startFlux(ctx context.Context) error {
	s := f.s
	s.Step("Flux's CRDs are installed, and the real source-controller and kustomize-controller start beside the control plane")
	s.Say("both are built from their Go modules (make testbin-flux) and run as processes: no pods, no DNS")
	if err := s.startFlux(ctx, s.logDir); err != nil {
		return err
	}
	s.Say("the gate-controller was already running: it starts holding Kustomizations and GitRepositories")
	s.Say("the moment their CRDs appear, without a restart")
	return nil
}

func (f *friday) freezeForTheWeekend(ctx context.Context) error {
	s := f.s
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
	_, err := s.Kubectl(ctx, "get", "gate", "prod")
	return err
}

func (f *friday) deployDuringTheFreeze(ctx context.Context) error {
	s := f.s
	s.Step("a team deploys its frontend with Flux during the freeze: a GitRepository and a Kustomization that waits for the gate")
	repo, err := s.newRepo("frontend")
	if err != nil {
		return err
	}
	if f.v1, err = repo.commit(ctx, "main", "frontend 1.4.0", map[string]string{
		"frontend.yaml": configMap("frontend", map[string]string{"version": "1.4.0"}),
	}); err != nil {
		return err
	}
	s.Say("%s holds commit %s: a ConfigMap frontend, version 1.4.0", repo.url, f.v1[:7])
	s.Say("Flux's CRDs cannot change, so the Kustomization names its gate in an annotation")
	if err := s.Apply(ctx, s.fluxDeploys(deployment{name: "frontend", url: repo.url, branch: "main", gates: "prod", interval: "1m"})); err != nil {
		return err
	}
	s.Say("the gate is closed, so the controller holds the Kustomization: spec.suspend for Flux, and the reason in the annotation")
	if _, err := s.Kubectl(ctx, "wait", "--for=jsonpath={.spec.suspend}=true", "kustomization/frontend", "--timeout=60s"); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "get", "kustomization", "frontend", "-o",
		`jsonpath={.metadata.annotations.reconcile\.fluxcd\.io/suspended}{"\n"}`); err != nil {
		return err
	}
	return f.showNothingApplied(ctx)
}

// showNothingApplied shows that source-controller fetched the commit, which is not gated, and
// that kustomize-controller applied nothing.
func (f *friday) showNothingApplied(ctx context.Context) error {
	s := f.s
	if err := s.waitFetched(ctx, "frontend", flux.Revision("main", f.v1)); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "get", "gitrepository,kustomization"); err != nil {
		return err
	}
	_, err := s.Env.Kube.CoreV1().ConfigMaps(s.Namespace).Get(ctx, "frontend", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("ConfigMap frontend exists while the gate holds its Kustomization (%v)", err)
	}
	s.Say("source-controller fetched %s; kustomize-controller, suspended, applied nothing: no ConfigMap frontend", f.v1[:7])
	if err := s.waitGate(ctx, "prod", func(g *gatingv1alpha1.Gate) bool { return g.Status.Holding == 1 }); err != nil {
		return err
	}
	_, err = s.kubectlGate(ctx, "list")
	return err
}

func (f *friday) hotfix(ctx context.Context) error {
	s := f.s
	s.Step("Friday 19:30, an incident: a hotfix must ship, so the on-call opens the gate for an hour")
	if _, err := s.kubectlGate(ctx, "open", "prod", "--for", "1h", "-m", "hotfix for INC-4711"); err != nil {
		return err
	}
	s.Say("the Kustomization is released, exactly: what the controller set is removed, nothing else")
	if err := s.waitReleased(ctx, "frontend"); err != nil {
		return err
	}
	if err := s.waitApplied(ctx, "frontend", "main", f.v1); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "get", "configmap", "frontend", "-o", `jsonpath=ConfigMap frontend: version {.data.version}{"\n"}`); err != nil {
		return err
	}
	if err := s.waitGate(ctx, "prod", func(g *gatingv1alpha1.Gate) bool { return g.Status.Holding == 0 }); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "get", "kustomization", "frontend", "-o",
		`custom-columns=NAME:.metadata.name,SUSPENDED:.spec.suspend,APPLIED:.status.lastAppliedRevision`); err != nil {
		return err
	}
	s.Say("in an hour the override expires, status reports it, and No Deploy Friday holds it again")
	_, err := s.Kubectl(ctx, "get", "gate", "prod", "-o", "wide")
	return err
}

// waitFetched waits until source-controller's artifact of the GitRepository is revision.
func (s *Story) waitFetched(ctx context.Context, name, revision string) error {
	var last any
	err := waitFor(ctx, func(ctx context.Context) (bool, error) {
		status, err := s.fluxStatus(ctx, false, name)
		if err != nil {
			return false, err
		}
		artifact, _ := status["artifact"].(map[string]any)
		last = artifact["revision"]
		return last == revision, nil
	})
	if err != nil {
		return fmt.Errorf("source-controller did not fetch %s for GitRepository %s (artifact %v): %w", revision, name, last, err)
	}
	return nil
}
