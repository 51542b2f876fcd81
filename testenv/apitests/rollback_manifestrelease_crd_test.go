package apitests

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

func manifestRelease(name string, mut func(*rollbackv1.ManifestReleaseSpec)) *rollbackv1.ManifestRelease {
	mr := &rollbackv1.ManifestRelease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: rollbackv1.ManifestReleaseSpec{Source: rollbackv1.ManifestSource{
			Git: &rollbackv1.GitManifestSource{RepositoryRef: rollbackv1.LocalReference{Name: "platform"}, Tag: "v1.0.0", Path: "flux"},
		}},
	}
	if mut != nil {
		mut(&mr.Spec)
	}
	return mr
}

func TestManifestReleaseValidation(t *testing.T) {
	ctx := context.Background()
	releases := client.RollbackV1alpha1().ManifestReleases("default")
	sha := strings.Repeat("ab", 20)
	for i, tc := range []struct {
		name    string
		release string
		mut     func(*rollbackv1.ManifestReleaseSpec)
		wantErr string
	}{
		{name: "git tag"},
		{name: "git branch and commit", mut: func(s *rollbackv1.ManifestReleaseSpec) {
			s.Source.Git.Tag, s.Source.Git.Branch, s.Source.Git.Commit = "", "main", sha
		}},
		{name: "oci digest", mut: func(s *rollbackv1.ManifestReleaseSpec) {
			s.Source = rollbackv1.ManifestSource{OCI: &rollbackv1.OCIManifestSource{Repository: "ghcr.io/fluxcd/flux-manifests", Digest: "sha256:" + strings.Repeat("0", 64)}}
		}},
		{name: "configmaps", mut: func(s *rollbackv1.ManifestReleaseSpec) {
			s.Source = rollbackv1.ManifestSource{ConfigMaps: []rollbackv1.ConfigMapReference{{Name: "v1"}}}
		}},
		{name: "two sources", mut: func(s *rollbackv1.ManifestReleaseSpec) {
			s.Source.ConfigMaps = []rollbackv1.ConfigMapReference{{Name: "v1"}}
		}, wantErr: "exactly one of source.git"},
		{name: "no source", mut: func(s *rollbackv1.ManifestReleaseSpec) { s.Source = rollbackv1.ManifestSource{} }, wantErr: "exactly one of source.git"},
		{name: "tag and branch", mut: func(s *rollbackv1.ManifestReleaseSpec) { s.Source.Git.Branch = "main" }, wantErr: "exactly one of tag and branch"},
		{name: "commit without branch", mut: func(s *rollbackv1.ManifestReleaseSpec) { s.Source.Git.Commit = sha }, wantErr: "commit needs the branch"},
		{name: "short commit", mut: func(s *rollbackv1.ManifestReleaseSpec) {
			s.Source.Git.Tag, s.Source.Git.Branch, s.Source.Git.Commit = "", "main", "abc123"
		}, wantErr: "spec.source.git.commit"},
		{name: "oci tag and digest", mut: func(s *rollbackv1.ManifestReleaseSpec) {
			s.Source = rollbackv1.ManifestSource{OCI: &rollbackv1.OCIManifestSource{Repository: "r", Tag: "v1", Digest: "sha256:" + strings.Repeat("0", 64)}}
		}, wantErr: "exactly one of tag and digest"},
		{name: "history limit 0", mut: func(s *rollbackv1.ManifestReleaseSpec) { zero := int32(0); s.HistoryLimit = &zero }, wantErr: "spec.historyLimit"},
		{name: "negative timeout", mut: func(s *rollbackv1.ManifestReleaseSpec) { s.Timeout = &metav1.Duration{Duration: -1} }, wantErr: "timeout must be positive"},
		{name: "bad test kind", mut: func(s *rollbackv1.ManifestReleaseSpec) {
			s.Test = &rollbackv1.ReleaseTest{DefinitionsFrom: []rollbackv1.TestDefinitionReference{{Kind: "Secret", Name: "t", Key: "k"}}}
		}, wantErr: "spec.test.definitionsFrom[0].kind"},
		{name: "long name", release: strings.Repeat("r", 64), wantErr: "at most 63 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.release
			if name == "" {
				name = "mr-" + string(rune('a'+i))
			}
			created, err := releases.Create(ctx, manifestRelease(name, tc.mut), metav1.CreateOptions{})
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, int32(5), *created.Spec.HistoryLimit, "historyLimit defaults to 5")
			assert.True(t, *created.Spec.Prune, "prune defaults to true")
			assert.Equal(t, "5m0s", created.Spec.Timeout.Duration.String())
		})
	}
}
