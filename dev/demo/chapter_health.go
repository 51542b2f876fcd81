package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
)

// webDeployment is the app's manifest at an image tag.
func webDeployment(tag string) map[string]string {
	return map[string]string{"web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "ghcr.io/example/web:` + tag + `"}]
`}
}

// health: real Flux applies a commit, the Deployment rolls out, the HealthCheck reads
// kustomize-controller's inventory, turns Ready, and a success CommitStatus appears for that
// commit. Then the next commit's rollout fails, and its CommitStatus says failure. Pods do not
// run on this control plane, so the demo plays the deployment controller and writes the
// Deployment's status; everything Flux reports, Flux wrote.
type health struct {
	s         *Story
	repo      *servedRepo
	good, bad string
}

func chapterHealth(ctx context.Context, s *Story) error {
	h := &health{s: s}
	return runSteps(ctx, h.fluxApplies, h.askForHealth, h.rolloutCompletes, h.badCommit, h.rolloutFails)
}

func (h *health) fluxApplies(ctx context.Context) error {
	s := h.s
	var err error
	if h.repo, err = s.newRepo("app"); err != nil {
		return err
	}
	if h.good, err = h.repo.commit(ctx, "main", "web 1.0.0", webDeployment("1.0.0")); err != nil {
		return err
	}
	s.Step("Flux deploys commit %s of the app, a Deployment, from %s", h.good[:7], h.repo.url)
	if err := s.Apply(ctx, s.fluxDeploys(deployment{name: "app", url: h.repo.url, branch: "main", interval: "1m"})); err != nil {
		return err
	}
	if err := s.waitApplied(ctx, "app", "main", h.good); err != nil {
		return err
	}
	s.Say("kustomize-controller recorded what it applied, and from which commit:")
	_, err = s.Kubectl(ctx, "get", "kustomization", "app", "-o",
		`jsonpath={.status.lastAppliedRevision}{"\n"}{range .status.inventory.entries[*]}{.id}{"\n"}{end}`)
	return err
}

func (h *health) askForHealth(ctx context.Context) error {
	s := h.s
	s.Step("the team asks for the health of what Flux applied, published as a commit status")
	s.Say("the HealthCheck reads as ServiceAccount health-reader, which may read this namespace's")
	s.Say("ConfigMaps, Deployments and Kustomizations only: no verdict tells what the team may not read itself")
	if err := s.Apply(ctx, healthReader(s.Namespace)+`
---
apiVersion: health.sluice.dev/v1alpha1
kind: HealthCheck
metadata:
  name: staging
spec:
  serviceAccountName: health-reader
  targets:
    - kustomization: {name: app}         # every object in its inventory
  timeout: 10m
  commitStatus:
    key: health-staging                  # promotions select CommitStatuses by this key
    repositoryRef: {name: app}
    revision:
      kustomization: {name: app}         # status.lastAppliedRevision: main@sha1:<sha>
`); err != nil {
		return err
	}
	if err := waitCommitStatus(ctx, s, "staging", h.good, commitstatusv1alpha1.CommitStatusPending); err != nil {
		return err
	}
	s.Say("the pods are not ready yet: the HealthCheck is in progress, and so is the commit status")
	_, err := s.Kubectl(ctx, "get", "healthcheck,commitstatus")
	return err
}

func (h *health) rolloutCompletes(ctx context.Context) error {
	s := h.s
	s.Step("the deployment controller reports the rollout complete (played by the demo: no pods run here)")
	if err := patchDeploymentStatus(ctx, s, 2, 2, "True", "NewReplicaSetAvailable", "ReplicaSet \"web-5d9c8b7f4\" has successfully progressed."); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "wait", "--for=condition=Ready", "healthcheck/staging", "--timeout=60s"); err != nil {
		return err
	}
	if err := waitCommitStatus(ctx, s, "staging", h.good, commitstatusv1alpha1.CommitStatusSuccess); err != nil {
		return err
	}
	s.Say("healthy: a success CommitStatus for the running commit, which a promotion can check")
	_, err := s.Kubectl(ctx, "get", "healthcheck,commitstatus")
	return err
}

func (h *health) badCommit(ctx context.Context) error {
	s := h.s
	var err error
	if h.bad, err = h.repo.commit(ctx, "main", "web 2.0.0", webDeployment("2.0.0")); err != nil {
		return err
	}
	s.Step("commit %s: a new image that never becomes ready; a push webhook asks Flux to fetch it now", h.bad[:7])
	if err := s.wakeSource(ctx, "app"); err != nil {
		return err
	}
	if err := s.waitApplied(ctx, "app", "main", h.bad); err != nil {
		return err
	}
	if err := waitCommitStatus(ctx, s, "staging", h.bad, commitstatusv1alpha1.CommitStatusPending); err != nil {
		return err
	}
	s.Say("the CommitStatus moved to the new commit, pending while it rolls out")
	return nil
}

func (h *health) rolloutFails(ctx context.Context) error {
	s := h.s
	s.Step("the rollout exceeds its progress deadline")
	if err := patchDeploymentStatus(ctx, s, 1, 2, "False", "ProgressDeadlineExceeded", "ReplicaSet \"web-7f6b4c9d8\" has timed out progressing."); err != nil {
		return err
	}
	if err := waitCommitStatus(ctx, s, "staging", h.bad, commitstatusv1alpha1.CommitStatusFailure); err != nil {
		return err
	}
	s.Say("failure for %s: a promotion stops here, and the last healthy revision is kept in status", h.bad[:7])
	if _, err := s.Kubectl(ctx, "get", "healthcheck", "staging", "-o",
		"custom-columns=HEALTHY:.status.healthy,CURRENT:.status.summary,LAST HEALTHY:.status.lastHealthyRevision,MESSAGE:.status.conditions[?(@.type==\"Ready\")].message"); err != nil {
		return err
	}
	_, err := s.Kubectl(ctx, "get", "commitstatus", "staging", "-o",
		"custom-columns=KEY:.metadata.labels.commitstatus\\.sluice\\.dev/key,SHA:.spec.sha,PHASE:.spec.phase,DESCRIPTION:.spec.description")
	return err
}

// patchDeploymentStatus writes what the deployment controller would for the current generation.
func patchDeploymentStatus(ctx context.Context, s *Story, updated, available int, progressing, reason, message string) error {
	d, err := s.Env.Kube.AppsV1().Deployments(s.Namespace).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"status":{"observedGeneration":%d,"replicas":2,"updatedReplicas":%d,"readyReplicas":%d,"availableReplicas":%d,`+
		`"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","message":"Deployment has minimum availability."},`+
		`{"type":"Progressing","status":%q,"reason":%q,"message":%q}]}}`,
		d.Generation, updated, available, available, progressing, reason, message)
	_, err = s.Kubectl(ctx, "patch", "deployment", "web", "--subresource=status", "--type=merge", "-p", patch)
	return err
}

// waitCommitStatus waits until the CommitStatus speaks of commit with phase, and fails the
// chapter otherwise.
func waitCommitStatus(ctx context.Context, s *Story, name, commit string, phase commitstatusv1alpha1.CommitStatusPhase) error {
	var last string
	err := testenv.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		cs, err := s.Env.Sluice.CommitstatusV1alpha1().CommitStatuses(s.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			last = "no CommitStatus yet"
			return false, nil
		}
		if err != nil {
			return false, err
		}
		last = fmt.Sprintf("%s for %s (%s)", cs.Spec.Phase, cs.Spec.SHA, cs.Spec.Description)
		return cs.Spec.SHA == commit && cs.Spec.Phase == phase, nil
	})
	if err != nil {
		return fmt.Errorf("CommitStatus %s never said %s for %s; last: %s: %w", name, phase, commit, last, err)
	}
	s.Say("CommitStatus %s: %s for %s", name, phase, strings.TrimSpace(commit[:12]))
	return nil
}

// healthReader is the ServiceAccount the HealthChecks read as, allowed the namespace's
// ConfigMaps, Deployments and Kustomizations.
func healthReader(namespace string) string {
	return `
apiVersion: v1
kind: ServiceAccount
metadata:
  name: health-reader
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: health-reader
rules:
  - apiGroups: ["", apps, kustomize.toolkit.fluxcd.io]
    resources: [configmaps, deployments, kustomizations]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: health-reader
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: health-reader}
subjects: [{kind: ServiceAccount, name: health-reader, namespace: ` + namespace + `}]
`
}
