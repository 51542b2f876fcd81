package suite

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/e2e/node"
)

// A pod resolves Service names through the node's CoreDNS, by full name and through its search
// path, and nothing else: a name outside the cluster does not resolve, since no query is
// forwarded off the machine.
func TestPodsResolveClusterNamesOnly(t *testing.T) {
	ns := cluster.namespace(t, "e2e-dns")
	api := node.KubernetesServiceIP.String() + ":443"
	for name, addr := range map[string]string{
		"full-name":   "kubernetes.default.svc." + node.ClusterDomain + ":443",
		"search-path": "kubernetes.default:443",
	} {
		ok, out := cluster.dial(t, ns, name, addr)
		assert.True(t, ok, "a pod reaches %s:\n%s", addr, out)
		assert.Contains(t, out, "connected to "+api, "%s resolves to the kubernetes Service", addr)
	}
	ok, out := cluster.dial(t, ns, "outside-name", "example.com:443")
	assert.False(t, ok, "a name outside the cluster does not resolve:\n%s", out)
	assert.Contains(t, out, "no such host")
}
