package manifestrelease_test

import (
	"fmt"
	"strings"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/pkg/snapshot"
)

// metric is the value of one series of the controller's registry, the release's namespace and
// name added to labels: a counter's or a gauge's, 0 when the series does not exist.
func (f *fixture) metric(name, release string, labels ...string) float64 {
	f.t.Helper()
	want := map[string]string{"namespace": f.ns, "name": release}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	families, err := f.manager.Metrics.Gather()
	require.NoError(f.t, err)
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
	series:
		for _, m := range family.GetMetric() {
			matched := 0
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; ok {
					if v != l.GetValue() {
						continue series
					}
					matched++
				}
			}
			if matched == len(want) {
				return m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

// waitMetric waits until the series reads want: metrics are counted just after the status write
// the test waits for.
func (f *fixture) waitMetric(want float64, name, release string, labels ...string) {
	f.t.Helper()
	f.waitFor(fmt.Sprintf("%s{%s} = %v", name, strings.Join(labels, ","), want), func() bool {
		return f.metric(name, release, labels...) == want
	})
}

// assertSnapshotMetrics checks the snapshot gauges against what the snapshot's head Secret says.
func (f *fixture) assertSnapshotMetrics(release string, number int64) {
	f.t.Helper()
	head, err := env.Kube.CoreV1().Secrets(f.ns).Get(f.ctx, fmt.Sprintf("%s.%d", release, number), metav1.GetOptions{})
	require.NoError(f.t, err)
	info, err := snapshot.InfoOf(head)
	require.NoError(f.t, err)
	f.waitMetric(float64(info.Chunks), "sluice_manifestrelease_snapshot_secrets", release)
	assert.Equal(f.t, float64(info.CompressedSize), f.metric("sluice_manifestrelease_snapshot_bytes", release, "encoding", "compressed"))
	assert.Equal(f.t, float64(info.Size), f.metric("sluice_manifestrelease_snapshot_bytes", release, "encoding", "uncompressed"))
}
