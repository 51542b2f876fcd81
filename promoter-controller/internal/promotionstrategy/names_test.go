package promotionstrategy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestObjectNameIsDeterministicAndValid(t *testing.T) {
	cases := map[string]struct{ strategy, branch string }{
		"plain":         {"web", "dev"},
		"slashes":       {"web", "env/prod"},
		"upper case":    {"web", "Prod"},
		"long":          {strings.Repeat("s", 40), strings.Repeat("b", 40)},
		"trailing dash": {"web", "dev-"},
	}
	seen := map[string]string{}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := objectName(tc.strategy, tc.branch)
			assert.Equal(t, n, objectName(tc.strategy, tc.branch), "the same inputs give the same name")
			assert.LessOrEqual(t, len(n), 63)
			assert.Regexp(t, `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, n)
			if other, dup := seen[n]; dup {
				t.Errorf("%s and %s map to the same name %s", name, other, n)
			}
			seen[n] = name
		})
	}
	assert.Equal(t, "web-dev", objectName("web", "dev"), "simple names stay readable")
	assert.NotEqual(t, objectName("web", "env/prod"), objectName("web", "env-prod"), "sanitised names that collide get a hash")
}
