package snapshot

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzUnpack feeds arbitrary bytes as an archive: nothing may panic, and whatever Unpack accepts
// must be exactly what Pack writes for the files it returned.
func FuzzUnpack(f *testing.F) {
	a, err := Pack(sampleFiles(), Options{})
	require.NoError(f, err)
	f.Add(a.Compressed, a.Digest)
	f.Add(a.Compressed[:len(a.Compressed)/2], a.Digest)
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd}, "sha256:")
	f.Add([]byte{}, "")
	f.Fuzz(func(t *testing.T, compressed []byte, wantDigest string) {
		files, err := Unpack(compressed, wantDigest, Options{MaxSize: 1 << 20})
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidArchive)
			return
		}
		again, err := Pack(files, Options{MaxSize: 1 << 20})
		require.NoError(t, err)
		require.Equal(t, wantDigest, again.Digest)
	})
}

// FuzzPackRoundTrip packs files named and filled from the input, split across Secrets of a
// fuzzed size: what comes back must equal what went in, or Pack must have refused the names.
func FuzzPackRoundTrip(f *testing.F) {
	f.Add("a.yaml\x00b/c.yaml", []byte("kind: A\n---\nkind: B\n"), 7)
	f.Add("../x", []byte("x"), 1)
	f.Add("dup\x00dup", []byte{}, 100)
	f.Fuzz(func(t *testing.T, joinedNames string, data []byte, chunkBytes int) {
		var files []File
		for i, name := range strings.Split(joinedNames, "\x00") {
			files = append(files, File{Name: name, Data: data[min(i, len(data)):]})
		}
		a, err := Pack(files, Options{})
		if err != nil {
			return
		}
		opts := Options{ChunkBytes: 1 + abs(chunkBytes)%4096, MaxChunks: 1 << 20}
		secrets, err := Secrets(meta(1), a, opts)
		require.NoError(t, err)
		joined, _, err := Join(secrets)
		require.NoError(t, err)
		got, err := Unpack(joined.Compressed, joined.Digest, Options{})
		require.NoError(t, err)
		require.Len(t, got, len(files))
		for _, want := range files {
			require.Equal(t, string(want.Data), string(find(t, got, want.Name).Data))
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
