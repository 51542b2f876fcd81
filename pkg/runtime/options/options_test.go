package options

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// All five controllers must start side by side on one host with no port flags.
func TestDefaultPortsDifferPerController(t *testing.T) {
	controllers := []string{"gate-controller", "health-controller", "promoter-controller", "commitstatus-controller", "rollback-controller"}
	seen := map[string]string{}
	for _, name := range controllers {
		opts := Defaults(name)
		for _, addr := range []string{opts.MetricsBindAddress, opts.HealthProbeBindAddress} {
			if other, taken := seen[addr]; taken {
				t.Errorf("%s and %s both default to %s", other, name, addr)
			}
			seen[addr] = name
		}
	}
	assert.Len(t, seen, 2*len(controllers))
}

func TestDefaultPortsOfAnUnlistedName(t *testing.T) {
	opts := Defaults("example-controller")
	assert.Equal(t, ":8080", opts.MetricsBindAddress)
	assert.Equal(t, ":8081", opts.HealthProbeBindAddress)
	assert.Equal(t, ":8084", Defaults("promoter-controller").MetricsBindAddress)
}
