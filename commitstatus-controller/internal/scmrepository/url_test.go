package scmrepository

import (
	"testing"

	rt "github.com/sluicehq/sluice/commitstatus-controller/internal/readiness/readinesstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/conditions"
)

func TestProviderVerdictChanged(t *testing.T) {
	base := rt.ReadyProvider(nil)
	base.ResourceVersion = "1"
	touched := base.DeepCopy()
	touched.ResourceVersion = "2"
	assert.False(t, ProviderVerdictChanged(base, touched), "a write that changed nothing a repository reads")

	respec := base.DeepCopy()
	respec.Generation++
	assert.True(t, ProviderVerdictChanged(base, respec))

	annotated := base.DeepCopy()
	annotated.Annotations = map[string]string{"reconcile.fluxcd.io/suspended": "migration"}
	assert.True(t, ProviderVerdictChanged(base, annotated))

	failed := base.DeepCopy()
	conditions.MarkStalled(&failed.Status.Conditions, base.Generation, "SecretNotFound", "gone")
	assert.True(t, ProviderVerdictChanged(base, failed))

	unchecked := rt.GitHubProvider(nil)
	assert.True(t, ProviderVerdictChanged(unchecked, base), "the first verdict")
}

func TestCheckRepositoryURL(t *testing.T) {
	for _, tc := range []struct {
		url       string
		loopback  bool
		ssh       bool
		errorPart string
	}{
		{url: "https://github.com/acme/app.git"},
		{url: "ssh://git@github.com/acme/app.git", ssh: true},
		{url: "git@github.com:acme/app.git", ssh: true},
		{url: "http://localhost:3000/acme/app.git", loopback: true},
		{url: "http://[::1]:3000/acme/app.git", loopback: true},
		{url: "http://localhost:3000/acme/app.git", errorPart: "uses http"},
		{url: "http://gitea.example.com/acme/app.git", loopback: true, errorPart: "uses http"},
		{url: "https://bot@github.com/acme/app.git", errorPart: "carries a user name"},
		{url: "ssh://git:pw@github.com/acme/app.git", errorPart: "carries a password"},
		{url: "git://github.com/acme/app.git", errorPart: `has scheme "git"`},
		{url: "/srv/git/app.git", errorPart: "fix spec.url"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			ssh, err := checkRepositoryURL(tc.url, tc.loopback)
			if tc.errorPart != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.errorPart)
				assert.NotContains(t, err.Error(), ":pw@")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.ssh, ssh)
		})
	}
}
