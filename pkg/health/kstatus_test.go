package health_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/pkg/health"
)

const deploymentAvailable = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: apps, generation: 4}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "ghcr.io/example/web:1.4.2"}]}
status:
  observedGeneration: 4
  replicas: 3
  updatedReplicas: 3
  readyReplicas: 3
  availableReplicas: 3
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}
`

func TestKstatusDeployment(t *testing.T) {
	e := evaluator(t, nil, nil, builtin(t))
	cases := []struct {
		name string
		doc  string
		want health.Status
	}{
		{"available", deploymentAvailable, health.Current},
		{"rolling out", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: apps, generation: 5}
spec: {replicas: 3}
status:
  observedGeneration: 5
  replicas: 4
  updatedReplicas: 1
  readyReplicas: 3
  availableReplicas: 3
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "True", reason: ReplicaSetUpdated}
`, health.InProgress},
		{"spec not observed", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: apps, generation: 6}
spec: {replicas: 3}
status: {observedGeneration: 5, replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3}
`, health.InProgress},
		{"progress deadline exceeded", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: apps, generation: 5}
spec: {replicas: 3}
status:
  observedGeneration: 5
  replicas: 4
  updatedReplicas: 1
  readyReplicas: 3
  availableReplicas: 3
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "False", reason: ProgressDeadlineExceeded, message: "ReplicaSet \"web-7d9f\" has timed out progressing."}
`, health.Failed},
		{"being deleted", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: apps, generation: 4, deletionTimestamp: "2026-05-01T10:00:00Z"}
spec: {replicas: 3}
status: {observedGeneration: 4, replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3}
`, health.InProgress},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := e.Evaluate(object(t, c.doc))
			assert.Equal(t, c.want, got.Status, got.Message)
		})
	}
}

func TestKstatusErrorIsUnknown(t *testing.T) {
	// A generation that is not a number cannot be compared.
	got := health.Kstatus(object(t, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, generation: "four"}, status: {observedGeneration: 4}}`))
	assert.Equal(t, health.Unknown, got.Status)
	assert.Contains(t, got.Message, "generation")
}
