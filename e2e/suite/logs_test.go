package suite

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// noRefusals reads the whole log of every controller pod of the release and fails on any line
// where the API server refused the controller (RBAC: forbidden) or a watch failed: a chart whose
// RBAC misses a verb can still become Ready and then fail at the first object of that kind.
// The other error lines are logged, for the record.
func (c *Cluster) noRefusals(t *testing.T) {
	ctx := context.Background()
	pods, err := c.Kube.CoreV1().Pods(system).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release})
	require.NoError(t, err)
	require.NotEmpty(t, pods.Items)
	for _, p := range pods.Items {
		b, err := c.Kube.CoreV1().Pods(system).GetLogs(p.Name, &corev1.PodLogOptions{Container: "controller"}).DoRaw(ctx)
		require.NoError(t, err)
		for _, line := range strings.Split(string(b), "\n") {
			lower := strings.ToLower(line)
			switch {
			case strings.Contains(lower, "forbidden"), strings.Contains(line, "Failed to watch"):
				assert.Fail(t, "refused", "%s: %s", p.Name, line)
			case strings.Contains(line, `"level":"ERROR"`):
				t.Logf("%s logged an error: %s", p.Name, line)
			}
		}
	}
}
