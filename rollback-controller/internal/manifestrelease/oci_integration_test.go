package manifestrelease_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/rollback-controller/internal/manifestrelease"
)

// pushArtifact pushes files as a Flux-style OCI artifact (one gzipped tarball layer) to ref and
// returns the manifest digest.
func pushArtifact(t *testing.T, ref string, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(files[n]))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, "application/vnd.cncf.flux.config.v1+json")
	img, err := mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(buf.Bytes(), manifestrelease.FluxContentMediaType)})
	require.NoError(t, err)
	parsed, err := name.ParseReference(ref, name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(parsed, img))
	digest, err := img.Digest()
	require.NoError(t, err)
	return digest.String()
}

// An OCI source served by go-containerregistry's registry in the test process: a tag, then a
// digest; a tag the registry lacks is Stalled with what to fix.
func TestOCISourceAtTagThenDigest(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	repo := strings.TrimPrefix(srv.URL, "http://") + "/platform/web"
	v1 := pushArtifact(t, repo+":v1", under("./manifests", app("nginx:1.0")))
	f.start(nil)
	f.createRelease("web", rollbackv1.ManifestReleaseSpec{Source: rollbackv1.ManifestSource{OCI: &rollbackv1.OCIManifestSource{
		Repository: "oci://" + repo, Tag: "v1", Path: "manifests", Insecure: true}}, Timeout: seconds(60)})
	mr := f.waitRelease("web", "v1 deployed", deployed(1))
	assert.Equal(t, "v1", mr.Status.DeployedVersion)
	assert.Equal(t, v1, mr.Status.History[0].Revision, "the revision is the manifest digest")
	assert.Equal(t, "nginx:1.0", f.deploymentImage("web"))

	v2 := pushArtifact(t, repo+":v2", under("manifests", app("nginx:2.0", "extra")))
	f.updateRelease("web", func(m *rollbackv1.ManifestRelease) { m.Spec.Source.OCI.Tag, m.Spec.Source.OCI.Digest = "", v2 })
	mr = f.waitRelease("web", "v2 deployed by digest", deployed(2))
	assert.Equal(t, v2, mr.Status.DeployedVersion, "the version defaults to the digest")
	assert.Equal(t, []string{"ConfigMap/extra", "ConfigMap/web-config", "Deployment/web"}, f.liveObjects("web"))

	f.updateRelease("web", func(m *rollbackv1.ManifestRelease) { m.Spec.Source.OCI.Tag, m.Spec.Source.OCI.Digest = "v9", "" })
	mr = f.waitRelease("web", "stalled on the missing tag", stalledWith("SourceNotFound"))
	assert.Contains(t, condition(mr, "Stalled").Message, "/platform/web:v9 does not exist in the registry")
}
