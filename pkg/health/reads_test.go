package health_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/runtime/dynamicwatch"
)

// kstatusObjects exercise every spec field kstatus reads, with values that change its answer.
var kstatusObjects = []string{
	deploymentAvailable,
	`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 2}, spec: {replicas: 5, progressDeadlineSeconds: 60,
	  template: {spec: {containers: [{name: a, image: a}]}}},
	  status: {observedGeneration: 2, replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3,
	  conditions: [{type: Progressing, status: "True", reason: ReplicaSetUpdated}]}}`,
	`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 2}, spec: {replicas: 3, progressDeadlineSeconds: 60},
	  status: {observedGeneration: 2, replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3,
	  conditions: [{type: Progressing, status: "True", reason: ReplicaSetUpdated}, {type: Available, status: "True"}]}}`,
	`{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: 1}, spec: {replicas: 3,
	  updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}, template: {spec: {containers: [{name: a}]}}},
	  status: {observedGeneration: 1, replicas: 3, readyReplicas: 3, currentReplicas: 2, updatedReplicas: 1,
	  currentRevision: a, updateRevision: b}}`,
	`{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: 1}, spec: {replicas: 3, updateStrategy: {type: OnDelete}},
	  status: {observedGeneration: 1, replicas: 3, readyReplicas: 3, currentReplicas: 1, updatedReplicas: 1}}`,
	`{apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: r, generation: 1}, spec: {replicas: 4},
	  status: {observedGeneration: 1, replicas: 4, readyReplicas: 4, availableReplicas: 3, fullyLabeledReplicas: 4}}`,
	`{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: ds, generation: 1}, spec: {template: {spec: {containers: [{name: a}]}}},
	  status: {observedGeneration: 1, desiredNumberScheduled: 3, currentNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 2, numberReady: 3}}`,
	`{apiVersion: batch/v1, kind: Job, metadata: {name: j, generation: 1}, spec: {parallelism: 2, completions: 4, template: {spec: {containers: [{name: a}]}}},
	  status: {succeeded: 2, active: 2, startTime: "2026-11-24T10:00:00Z"}}`,
	`{apiVersion: batch/v1, kind: Job, metadata: {name: j, generation: 1}, spec: {parallelism: 1},
	  status: {succeeded: 1, startTime: "2026-11-24T10:00:00Z"}}`,
	`{apiVersion: batch/v1, kind: Job, metadata: {name: j, generation: 1}, spec: {parallelism: 2, completions: 4},
	  status: {succeeded: 4, startTime: "2026-11-24T10:00:00Z", conditions: [{type: Complete, status: "True"}]}}`,
	`{apiVersion: batch/v1, kind: Job, metadata: {name: j, generation: 1}, spec: {parallelism: 3},
	  status: {succeeded: 3, startTime: "2026-11-24T10:00:00Z", conditions: [{type: Complete, status: "True"}]}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: lb}, spec: {type: LoadBalancer, clusterIP: 10.0.0.1, ports: [{port: 80}]}, status: {}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: lb}, spec: {type: LoadBalancer, clusterIP: 10.0.0.1},
	  status: {loadBalancer: {ingress: [{ip: 1.2.3.4}]}}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: lb}, spec: {type: LoadBalancer}, status: {}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: ext}, spec: {type: ExternalName, externalName: example.com}}`,
	`{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: p, generation: 1}, spec: {minAvailable: 2},
	  status: {observedGeneration: 1, currentHealthy: 1, desiredHealthy: 2}}`,
	`{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c}, spec: {resources: {requests: {storage: 1Gi}}}, status: {phase: Pending}}`,
	`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 1, deletionTimestamp: "2026-11-24T10:00:00Z",
	  annotations: {a: b}, uid: u, creationTimestamp: "2026-11-24T09:00:00Z"}, spec: {replicas: 1},
	  status: {observedGeneration: 1, replicas: 1, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1,
	  conditions: [{type: Progressing, status: "True", reason: NewReplicaSetAvailable}, {type: Available, status: "True"}]}}`,
	`{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: a}]},
	  status: {phase: Running, conditions: [{type: Ready, status: "True"}], containerStatuses: [{name: a, ready: true}]}}`,
	`{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: w.example.org}, spec: {group: example.org},
	  status: {conditions: [{type: Established, status: "True"}, {type: NamesAccepted, status: "True"}]}}`,
	`{apiVersion: example.org/v1, kind: Widget, metadata: {name: w, generation: 3}, spec: {size: 3},
	  status: {observedGeneration: 3, conditions: [{type: Ready, status: "False", reason: Waiting}]}}`,
}

// Evaluator.Reads lists everything kstatus reads: a watch that keeps only that gives kstatus the
// same answers. The objects set each spec field kstatus reads to a value that matters.
func TestKstatusReadsOnlyWhatIsListed(t *testing.T) {
	e := evaluator(t, nil, nil, nil)
	for _, doc := range kstatusObjects {
		whole := object(t, doc)
		keep := dynamicwatch.FieldsOf(e.Reads(whole.GroupVersionKind())...)
		require.NotNil(t, keep, "kstatus kinds are projected")
		out, err := dynamicwatch.Project(keep)(whole.DeepCopy())
		require.NoError(t, err)
		part := out.(*unstructured.Unstructured)
		assert.NotContains(t, part.Object["spec"], "template", "the pod template is dropped")
		assert.NotContains(t, part.Object["metadata"], "annotations", "so is metadata kstatus does not read")
		assert.Equal(t, e.Evaluate(whole), e.Evaluate(part), doc)
	}
}

// Dropping one of the spec fields kstatus reads changes an answer: the test above can fail.
func TestKstatusObjectsNeedTheirSpecFields(t *testing.T) {
	e := evaluator(t, nil, nil, nil)
	changed := map[string]bool{}
	for _, doc := range kstatusObjects {
		whole := object(t, doc)
		spec, _ := whole.Object["spec"].(map[string]any)
		for field := range spec {
			part := whole.DeepCopy()
			delete(part.Object["spec"].(map[string]any), field)
			if e.Evaluate(whole) != e.Evaluate(part) {
				changed[field] = true
			}
		}
	}
	for _, field := range []string{"replicas", "updateStrategy", "progressDeadlineSeconds", "parallelism", "completions", "type", "clusterIP"} {
		assert.True(t, changed[field], "no object whose health depends on spec.%s", field)
	}
}

func TestReadsOfACheckedKindAreItsExpressions(t *testing.T) {
	check := health.Check{APIVersion: "example.org/v1", Kind: "Widget",
		Failed: "self.spec.limits.max < status.size", Current: "status.phase == 'Ready'"}
	e := evaluator(t, []health.Check{check}, nil, nil)
	reads := e.Reads(object(t, `{apiVersion: example.org/v1, kind: Widget}`).GroupVersionKind())
	assert.Contains(t, reads, []string{"spec", "limits", "max"})
	assert.Contains(t, reads, []string{"status", "phase"})
	assert.NotContains(t, reads, []string{"spec", "replicas"}, "kstatus does not run for a checked kind")
}

// Evaluate reads the deletion and the generation of an object: the test above can fail.
func TestKstatusObjectsNeedTheirMetadataFields(t *testing.T) {
	e := evaluator(t, nil, nil, nil)
	changed := map[string]bool{}
	for _, doc := range kstatusObjects {
		whole := object(t, doc)
		for _, field := range []string{"deletionTimestamp", "generation"} {
			part := whole.DeepCopy()
			unstructured.RemoveNestedField(part.Object, "metadata", field)
			if e.Evaluate(whole) != e.Evaluate(part) {
				changed[field] = true
			}
		}
	}
	assert.True(t, changed["deletionTimestamp"])
	assert.True(t, changed["generation"])
}
