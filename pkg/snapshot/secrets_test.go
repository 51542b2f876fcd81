package snapshot

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func meta(number int64) Meta {
	return Meta{Namespace: "platform", Release: "flux", Number: number,
		Annotations: map[string]string{"rollback.sluice.dev/version": "v2.3.0"}}
}

func TestSecretsSplitAndJoinBackWhole(t *testing.T) {
	a, err := Pack(generated(400), Options{})
	require.NoError(t, err)
	opts := Options{ChunkBytes: len(a.Compressed)/3 + 1}
	secrets, err := Secrets(meta(7), a, opts)
	require.NoError(t, err)
	require.Len(t, secrets, 3)
	require.Equal(t, []string{"flux.7", "flux.7-1", "flux.7-2"}, secretNames(secrets))
	for i, s := range secrets {
		require.Equal(t, SecretType, s.Type)
		require.True(t, *s.Immutable)
		require.LessOrEqual(t, len(s.Data[DataKey]), opts.ChunkBytes)
		require.Equal(t, map[string]string{LabelRelease: "flux", LabelNumber: "7", LabelChunk: strconv.Itoa(i),
			"app.kubernetes.io/managed-by": "rollback-controller"}, s.Labels)
		require.Equal(t, a.Digest, s.Annotations[AnnotationDigest])
	}
	require.Equal(t, "3", secrets[0].Annotations[AnnotationChunks])
	require.Equal(t, "v2.3.0", secrets[0].Annotations["rollback.sluice.dev/version"])

	joined, info, err := Join(secrets)
	require.NoError(t, err)
	require.Equal(t, a, joined)
	require.Equal(t, int64(7), info.Number)
	require.Equal(t, 3, info.Chunks)
	require.Equal(t, int64(len(a.Compressed)), info.CompressedSize)
	files, err := Unpack(joined.Compressed, joined.Digest, Options{})
	require.NoError(t, err)
	require.Len(t, files, 400)
}

func TestSecretsFitInOneWhenSmall(t *testing.T) {
	a, err := Pack(sampleFiles(), Options{})
	require.NoError(t, err)
	secrets, err := Secrets(meta(1), a, Options{})
	require.NoError(t, err)
	require.Equal(t, []string{"flux.1"}, secretNames(secrets))
	require.Equal(t, a.Compressed, secrets[0].Data[DataKey])
}

func TestSecretsRefuseMoreChunksThanAllowed(t *testing.T) {
	a, err := Pack(generated(400), Options{})
	require.NoError(t, err)
	_, err = Secrets(meta(1), a, Options{ChunkBytes: len(a.Compressed) / 3, MaxChunks: 3})
	var tooLarge *TooLargeError
	require.True(t, errors.As(err, &tooLarge), "%v", err)
	require.Equal(t, 4, tooLarge.Needed)
	require.Equal(t, 3, tooLarge.MaxChunks)
	require.Contains(t, err.Error(), "--snapshot-max-chunks")
}

func TestJoinRefusesSecretsThatDoNotFit(t *testing.T) {
	a, err := Pack(generated(400), Options{})
	require.NoError(t, err)
	b, err := Pack(generated(399), Options{})
	require.NoError(t, err)
	opts := Options{ChunkBytes: len(a.Compressed)/3 + 1}
	secrets, err := Secrets(meta(2), a, opts)
	require.NoError(t, err)
	other, err := Secrets(meta(2), b, opts)
	require.NoError(t, err)

	cases := map[string][]*corev1.Secret{
		"missing chunk":      {secrets[0], secrets[1]},
		"swapped chunks":     {secrets[0], secrets[2], secrets[1]},
		"chunk of other one": {secrets[0], other[1], secrets[2]},
		"no head":            {secrets[1], secrets[2]},
		"none":               nil,
	}
	for name, list := range cases {
		_, _, err := Join(list)
		require.ErrorIs(t, err, ErrIncomplete, name)
	}
}

func TestValidateMeta(t *testing.T) {
	require.NoError(t, ValidateMeta(Meta{Release: strings.Repeat("a", 63), Number: 1}))
	require.ErrorContains(t, ValidateMeta(Meta{Release: strings.Repeat("a", 64), Number: 1}), "at most 63")
	require.Error(t, ValidateMeta(Meta{Release: "", Number: 1}))
	require.Error(t, ValidateMeta(Meta{Release: "Flux", Number: 1}))
	require.ErrorContains(t, ValidateMeta(Meta{Release: "flux", Number: 0}), "start at 1")
}

// No head or chunk name of one release equals one of another release, dots in names included.
func TestSecretNamesNeverCollideAcrossReleases(t *testing.T) {
	releases := []string{"a", "a.1", "a.1-2", "a.1.2", "a-1", "a.12", "a1"}
	seen := map[string]string{}
	for _, r := range releases {
		for n := int64(1); n <= 12; n++ {
			for c := 0; c < 12; c++ {
				name := ChunkName(r, n, c)
				who := r + "#" + strconv.FormatInt(n, 10) + "#" + strconv.Itoa(c)
				if prev, ok := seen[name]; ok {
					t.Fatalf("%s is both %s and %s", name, prev, who)
				}
				seen[name] = who
			}
		}
	}
}

func TestOwnerIsSetOnEveryChunk(t *testing.T) {
	a, err := Pack(generated(400), Options{})
	require.NoError(t, err)
	m := meta(3)
	m.Owner = &metav1.OwnerReference{APIVersion: "rollback.sluice.dev/v1alpha1", Kind: "ManifestRelease", Name: "flux", UID: "u-1"}
	secrets, err := Secrets(m, a, Options{ChunkBytes: len(a.Compressed)/2 + 1})
	require.NoError(t, err)
	for _, s := range secrets {
		require.Equal(t, []metav1.OwnerReference{*m.Owner}, s.OwnerReferences)
	}
}

func secretNames(secrets []*corev1.Secret) []string {
	out := make([]string, len(secrets))
	for i, s := range secrets {
		out[i] = s.Name
	}
	return out
}
