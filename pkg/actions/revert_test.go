package actions

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation"
)

// A RevertCommit a person starts gets a valid name whatever its environment's branch holds.
func TestRevertNamePrefixIsAValidGenerateName(t *testing.T) {
	for _, c := range []struct{ strategy, branch, want string }{
		{"checkout", "env/dev", "checkout-env-dev-"},
		{"checkout", "prod", "checkout-prod-"},
		{"checkout", "Env_Prod.", "checkout-env-prod-"},
		{"web", strings.Repeat("x/", 150), "web-" + strings.Repeat("x-", 98)},
	} {
		got := RevertNamePrefix(c.strategy, c.branch)
		assert.Equal(t, c.want, got, c.branch)
		assert.Empty(t, validation.IsDNS1123Subdomain(got+"abcde"), "%q with a suffix is a valid name", got)
	}
}
