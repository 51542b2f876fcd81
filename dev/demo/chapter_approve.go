package demo

import (
	"context"
	"fmt"
)

// approval: a gate that stays closed lets one infrastructure commit through, and the next one
// only once someone approves it too. The gate-controller pins the Kustomization's GitRepository to
// the approved commit, so real kustomize-controller can apply that commit and no other.
type approval struct {
	s      *Story
	repo   *servedRepo
	r1, r2 string
}

func approveOneRevision(ctx context.Context, s *Story) error {
	a := &approval{s: s}
	return runSteps(ctx, a.heldUntilSignOff, a.approveFirst, a.nextCommitWaits, a.approveNext)
}

// infraFiles is the infrastructure repository's content at a version.
func infraFiles(version string) map[string]string {
	return map[string]string{"ingress.yaml": configMap("ingress-controller", map[string]string{"version": version})}
}

func (a *approval) heldUntilSignOff(ctx context.Context) error {
	s := a.s
	s.Step("infrastructure upgrades need sign-off: a closed gate approves one commit, and only it")
	var err error
	if a.repo, err = s.newRepo("infra"); err != nil {
		return err
	}
	if a.r1, err = a.repo.commit(ctx, "main", "ingress-controller 1.12", infraFiles("1.12")); err != nil {
		return err
	}
	if err := s.Apply(ctx, `
apiVersion: gating.sluice.dev/v1alpha1
kind: Gate
metadata:
  name: infra
spec:
  closed: true
  message: infrastructure upgrades need sign-off
---`+s.fluxDeploys(deployment{name: "infra", url: a.repo.url, branch: "main", gates: "infra", interval: "1m"})); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "wait", "--for=jsonpath={.spec.suspend}=true", "kustomization/infra", "--timeout=60s"); err != nil {
		return err
	}
	if err := s.waitFetched(ctx, "infra", "main@sha1:"+a.r1); err != nil {
		return err
	}
	s.Say("the source is not gated: source-controller fetched %s; the Kustomization waits for a sign-off", a.r1[:7])
	return nil
}

func (a *approval) approveFirst(ctx context.Context) error {
	s := a.s
	s.Step("the platform lead approves exactly commit %s; the plugin records who and when", a.r1[:7])
	if _, err := s.kubectlGate(ctx, "approve", "infra", "--revision", "main@sha1:"+a.r1, "-m", "reviewed in PR #42"); err != nil {
		return err
	}
	s.Say("the gate-controller pins the GitRepository to that commit, then releases the Kustomization:")
	s.Say("the source cannot move to a commit nobody approved before kustomize-controller applies")
	if err := s.waitConfigMap(ctx, "ingress-controller", "version", "1.12"); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "get", "gitrepository", "infra", "-o", `jsonpath=pinned to {.spec.ref.commit}{"\n"}`); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "get", "kustomization", "infra", "-o",
		`custom-columns=NAME:.metadata.name,SUSPENDED:.spec.suspend,APPLIED:.status.lastAppliedRevision`); err != nil {
		return err
	}
	_, err := s.Kubectl(ctx, "get", "gate", "infra")
	return err
}

func (a *approval) nextCommitWaits(ctx context.Context) error {
	s := a.s
	var err error
	if a.r2, err = a.repo.commit(ctx, "main", "ingress-controller 1.13", infraFiles("1.13")); err != nil {
		return err
	}
	s.Step("commit %s (ingress-controller 1.13) lands on main; nobody approved it", a.r2[:7])
	s.Say("source-controller is asked to fetch now, as `flux reconcile source git infra` would")
	if err := s.wakeSource(ctx, "infra"); err != nil {
		return err
	}
	if err := s.waitFetched(ctx, "infra", "main@sha1:"+a.r1); err != nil {
		return err
	}
	cm, err := s.Kubectl(ctx, "get", "configmap", "ingress-controller", "-o", `jsonpath={.data.version}`)
	if err != nil {
		return err
	}
	if cm != "1.12" {
		return fmt.Errorf("the unapproved commit %s was applied: version %q", a.r2[:7], cm)
	}
	s.Say("the pinned source stays at %s, and the cluster runs 1.12: the new commit waits on the branch", a.r1[:7])
	return nil
}

func (a *approval) approveNext(ctx context.Context) error {
	s := a.s
	s.Step("the next sign-off moves the pin, and kustomize-controller applies %s", a.r2[:7])
	if _, err := s.kubectlGate(ctx, "approve", "infra", "--revision", "main@sha1:"+a.r2, "-m", "reviewed in PR #43"); err != nil {
		return err
	}
	if err := s.waitConfigMap(ctx, "ingress-controller", "version", "1.13"); err != nil {
		return err
	}
	_, err := s.Kubectl(ctx, "get", "configmap", "ingress-controller", "-o", `jsonpath=ConfigMap ingress-controller: version {.data.version}{"\n"}`)
	return err
}
