package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// releaseVersion is one version of the chapter's manifests: podinfo at an image tag, and the
// extra ConfigMap the release candidate adds.
func releaseVersion(tag string, withFlags bool) string {
	manifests := fmt.Sprintf(`    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: podinfo}
    spec:
      replicas: 1
      selector: {matchLabels: {app: podinfo}}
      template:
        metadata: {labels: {app: podinfo}}
        spec:
          containers: [{name: podinfo, image: "ghcr.io/stefanprodan/podinfo:%s"}]
    ---
    apiVersion: v1
    kind: Service
    metadata: {name: podinfo}
    spec:
      selector: {app: podinfo}
      ports: [{port: 9898}]
`, tag)
	if withFlags {
		manifests += `    ---
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: podinfo-feature-flags}
    data: {newUI: "true"}
`
	}
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: podinfo-%s\ndata:\n  podinfo.yaml: |\n%s", tag, manifests)
}

const releaseTests = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: podinfo-tests
data:
  smoke.yaml: |
    apiVersion: batch/v1
    kind: Job
    metadata: {name: podinfo-smoke}
    spec:
      backoffLimit: 0
      template:
        spec:
          restartPolicy: Never
          containers: [{name: curl, image: curlimages/curl:8.10.1, args: ["-fsS", "http://podinfo:9898/healthz"]}]
`

// releaseTenant is the ServiceAccount the release acts as, allowed in the demo's namespace only
// what podinfo, its smoke test and its snapshots need.
func releaseTenant(namespace string) string {
	return `
apiVersion: v1
kind: ServiceAccount
metadata:
  name: podinfo-releaser
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: podinfo-releaser
rules:
  - apiGroups: ["", apps, batch]
    resources: [configmaps, services, deployments, jobs]
    verbs: [get, list, watch, create, update, patch, delete]
  - apiGroups: [""]
    resources: [secrets]
    verbs: [get, create, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: podinfo-releaser
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: podinfo-releaser}
subjects: [{kind: ServiceAccount, name: podinfo-releaser, namespace: ` + namespace + `}]
`
}

const releaseV1 = `
apiVersion: rollback.sluice.dev/v1alpha1
kind: ManifestRelease
metadata:
  name: podinfo
spec:
  serviceAccountName: podinfo-releaser
  source:
    configMaps: [{name: podinfo-6.7.0}]
  version: "6.7.0"
  timeout: 2m
  test:
    enable: true
    definitionsFrom: [{kind: ConfigMap, name: podinfo-tests, key: smoke.yaml}]
`

// chapterRelease: a ManifestRelease installs v1 (snapshot 1) and its smoke test passes; v2's
// smoke test fails, so v1 comes back, with the reason; v3 passes.
func chapterRelease(ctx context.Context, s *Story) error {
	play, stop := context.WithCancel(ctx)
	defer stop()
	go playPodinfo(play, s, "6.8.0-rc.1")

	s.Step("v1 of podinfo as plain manifests in a ConfigMap, a smoke test, and a ManifestRelease with tests")
	s.Say("no pods run on this control plane: the demo plays the Deployment and Job controllers,")
	s.Say("and podinfo 6.8.0-rc.1 answers the smoke test with HTTP 500")
	s.Say("the release acts as ServiceAccount podinfo-releaser, allowed only this namespace's")
	s.Say("ConfigMaps, Services, Deployments, Jobs and snapshot Secrets: nothing runs with the controller's rights")
	if err := s.Apply(ctx, strings.Join([]string{releaseTenant(s.Namespace), releaseVersion("6.7.0", false), releaseTests, releaseV1}, "\n---\n")); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "wait", "--for=condition=Ready", "manifestrelease/podinfo", "--timeout=120s"); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "get", "manifestrelease", "podinfo"); err != nil {
		return err
	}
	s.Say("version 6.7.0 is kept as snapshot 1, a zstd-compressed tar in an immutable Secret:")
	if _, err := s.Kubectl(ctx, "get", "secrets", "-l", "rollback.sluice.dev/release=podinfo",
		"-o", `custom-columns=NAME:.metadata.name,TYPE:.type,VERSION:.metadata.annotations.rollback\.sluice\.dev/version,BYTES:.metadata.annotations.rollback\.sluice\.dev/compressed-size`); err != nil {
		return err
	}

	s.Step("v2, a release candidate with a feature-flag ConfigMap: applied, healthy, but its smoke test fails")
	if err := s.Apply(ctx, releaseVersion("6.8.0-rc.1", true)); err != nil {
		return err
	}
	if err := upgradeRelease(ctx, s, "6.8.0-rc.1"); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "wait", "--for=condition=RolledBack", "manifestrelease/podinfo", "--timeout=120s"); err != nil {
		return err
	}
	s.Say("rolled back to snapshot 1, with the reason:")
	if _, err := s.Kubectl(ctx, "get", "manifestrelease", "podinfo", "-o",
		`jsonpath={.status.conditions[?(@.type=="RolledBack")].message}{"\n"}`); err != nil {
		return err
	}
	s.Say("6.7.0 runs again, the feature-flag ConfigMap only v2 had is gone, and so is the test Job:")
	if _, err := s.Kubectl(ctx, "get", "deployments,configmaps,jobs", "-l", "rollback.sluice.dev/release-name=podinfo",
		"-o", `custom-columns=KIND:.kind,NAME:.metadata.name,IMAGE:.spec.template.spec.containers[0].image`); err != nil {
		return err
	}

	s.Step("v3, the fixed release: applied, its smoke test passes")
	if err := s.Apply(ctx, releaseVersion("6.8.0", true)); err != nil {
		return err
	}
	if err := upgradeRelease(ctx, s, "6.8.0"); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "wait", "--for=jsonpath={.status.deployedVersion}=6.8.0", "manifestrelease/podinfo", "--timeout=120s"); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "get", "manifestrelease", "podinfo", "-o", "wide"); err != nil {
		return err
	}
	_, err := s.Kubectl(ctx, "get", "manifestrelease", "podinfo", "-o",
		`jsonpath={range .status.history[*]}snapshot {.number}: {.version} tests {.test} rolled back {.rolledBack}{"\n"}{end}`)
	return err
}

// upgradeRelease points the release at the ConfigMap of version tag.
func upgradeRelease(ctx context.Context, s *Story, tag string) error {
	patch := fmt.Sprintf(`{"spec":{"version":%q,"source":{"configMaps":[{"name":"podinfo-%s"}]}}}`, tag, tag)
	_, err := s.Kubectl(ctx, "patch", "manifestrelease", "podinfo", "--type=merge", "-p", patch)
	return err
}

// playPodinfo stands in for the Deployment and Job controllers: it reports each podinfo rollout
// done, and decides the smoke test by the image podinfo runs, failing it for badTag.
func playPodinfo(ctx context.Context, s *Story, badTag string) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		image := rollOutPodinfo(ctx, s)
		if image != "" {
			finishSmokeTest(ctx, s, strings.HasSuffix(image, ":"+badTag))
		}
	}
}

func rollOutPodinfo(ctx context.Context, s *Story) string {
	d, err := s.Env.Kube.AppsV1().Deployments(s.Namespace).Get(ctx, "podinfo", metav1.GetOptions{})
	if err != nil {
		return ""
	}
	if d.Status.ObservedGeneration != d.Generation {
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1,
			AvailableReplicas: 1, Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
			}}
		if _, err := s.Env.Kube.AppsV1().Deployments(s.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
			return ""
		}
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

func finishSmokeTest(ctx context.Context, s *Story, fail bool) {
	job, err := s.Env.Kube.BatchV1().Jobs(s.Namespace).Get(ctx, "podinfo-smoke", metav1.GetOptions{})
	if err != nil || len(job.Status.Conditions) > 0 || job.DeletionTimestamp != nil {
		return
	}
	now := metav1.Now()
	if fail {
		msg := "curl: (22) The requested URL returned error: 500"
		job.Status = batchv1.JobStatus{StartTime: &now, Failed: 1, Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: msg, LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: msg, LastTransitionTime: now},
		}}
	} else {
		job.Status = batchv1.JobStatus{StartTime: &now, CompletionTime: &now, Succeeded: 1, Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
		}}
	}
	_, _ = s.Env.Kube.BatchV1().Jobs(s.Namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{})
}
