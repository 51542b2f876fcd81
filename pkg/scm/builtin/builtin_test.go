package builtin_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	scmv1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/scm"
	_ "github.com/sluicehq/sluice/pkg/scm/builtin"
)

// Every type an ScmProvider may declare has a registered provider of the same name.
func TestEveryScmProviderTypeIsRegistered(t *testing.T) {
	for _, typ := range []scmv1.ScmProviderType{
		scmv1.ScmProviderGitHub, scmv1.ScmProviderGitLab, scmv1.ScmProviderGitea, scmv1.ScmProviderForgejo, scmv1.ScmProviderGit,
	} {
		assert.Contains(t, scm.Registered(), string(typ))
	}
}
