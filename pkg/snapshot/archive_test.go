package snapshot

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
)

func sampleFiles() []File {
	return []File{
		{Name: "deploy/web.yaml", Data: []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n")},
		{Name: "crds/widgets.yaml", Data: []byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n")},
		{Name: "empty.yaml", Data: nil},
	}
}

func TestPackRoundTripsInNameOrder(t *testing.T) {
	files := sampleFiles()
	a, err := Pack(files, Options{})
	require.NoError(t, err)
	got, err := Unpack(a.Compressed, a.Digest, Options{})
	require.NoError(t, err)
	require.Equal(t, []string{"crds/widgets.yaml", "deploy/web.yaml", "empty.yaml"}, names(got))
	for _, f := range files {
		require.Equal(t, string(f.Data), string(find(t, got, f.Name).Data), f.Name)
	}
}

func TestPackDependsOnlyOnNamesAndBytes(t *testing.T) {
	files := sampleFiles()
	a, err := Pack(files, Options{})
	require.NoError(t, err)
	reversed := []File{files[2], files[1], files[0]}
	b, err := Pack(reversed, Options{})
	require.NoError(t, err)
	require.Equal(t, a.Digest, b.Digest)
	require.Equal(t, a.Compressed, b.Compressed)

	raw, err := decompress(a.Compressed, DefaultMaxSize)
	require.NoError(t, err)
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		require.Equal(t, int64(0), hdr.ModTime.Unix(), hdr.Name)
		require.Equal(t, int64(0o644), hdr.Mode, hdr.Name)
		require.Zero(t, hdr.Uid)
		require.Zero(t, hdr.Gid)
		require.Empty(t, hdr.Uname)
	}

	d, err := Digest(reversed, Options{})
	require.NoError(t, err)
	require.Equal(t, a.Digest, d, "Digest agrees with Pack")

	changed := sampleFiles()
	changed[0].Data = append(changed[0].Data, '#')
	c, err := Pack(changed, Options{})
	require.NoError(t, err)
	require.NotEqual(t, a.Digest, c.Digest)
}

func TestPackRefusesBadNames(t *testing.T) {
	for _, name := range []string{"", "/etc/passwd", "../up.yaml", "a/../../b", "./a.yaml", "a//b", "a/", ".", "..", `a\b`, "a\x00b"} {
		_, err := Pack([]File{{Name: name, Data: []byte("x")}}, Options{})
		require.Error(t, err, "%q", name)
	}
	_, err := Pack([]File{{Name: "a.yaml"}, {Name: "a.yaml"}}, Options{})
	require.ErrorContains(t, err, "twice")
}

func TestPackRefusesOverMaxSize(t *testing.T) {
	_, err := Pack([]File{{Name: "big.yaml", Data: make([]byte, 4096)}}, Options{MaxSize: 4000})
	require.ErrorContains(t, err, "over the limit")
}

func TestUnpackRefusesAnotherDigest(t *testing.T) {
	a, err := Pack(sampleFiles(), Options{})
	require.NoError(t, err)
	b, err := Pack(sampleFiles()[:1], Options{})
	require.NoError(t, err)
	_, err = Unpack(a.Compressed, b.Digest, Options{})
	require.ErrorIs(t, err, ErrInvalidArchive)
	require.ErrorContains(t, err, "digest")
}

func TestUnpackRefusesCorruptOrTruncatedArchives(t *testing.T) {
	a, err := Pack(sampleFiles(), Options{})
	require.NoError(t, err)
	truncated := a.Compressed[:len(a.Compressed)-3]
	_, err = Unpack(truncated, a.Digest, Options{})
	require.ErrorIs(t, err, ErrInvalidArchive)

	flipped := bytes.Clone(a.Compressed)
	flipped[len(flipped)/2] ^= 0xff
	_, err = Unpack(flipped, a.Digest, Options{})
	require.ErrorIs(t, err, ErrInvalidArchive)
}

// A few hundred bytes that decompress to far more than the limit are refused while decompressing.
func TestUnpackRefusesADecompressionBomb(t *testing.T) {
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	zeros := make([]byte, 64<<20)
	bomb := enc.EncodeAll(zeros, nil)
	require.Less(t, len(bomb), 64<<10)
	_, err = Unpack(bomb, digest(zeros), Options{MaxSize: 1 << 20})
	require.ErrorIs(t, err, ErrInvalidArchive)
	require.NotContains(t, err.Error(), "digest")
}

func TestUnpackRefusesWhatPackCannotWrite(t *testing.T) {
	cases := map[string]func(*tar.Writer){
		"symlink": func(tw *tar.Writer) {
			require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "a.yaml", Linkname: "/etc/passwd"}))
		},
		"escaping name": func(tw *tar.Writer) { writeEntry(t, tw, "../a.yaml", "x") },
		"out of order": func(tw *tar.Writer) {
			writeEntry(t, tw, "b.yaml", "x")
			writeEntry(t, tw, "a.yaml", "x")
		},
		"repeated": func(tw *tar.Writer) {
			writeEntry(t, tw, "a.yaml", "x")
			writeEntry(t, tw, "a.yaml", "y")
		},
	}
	for name, write := range cases {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			write(tw)
			require.NoError(t, tw.Close())
			enc, err := encoder(Level)
			require.NoError(t, err)
			_, err = Unpack(enc.EncodeAll(buf.Bytes(), nil), digest(buf.Bytes()), Options{})
			require.ErrorIs(t, err, ErrInvalidArchive)
		})
	}
}

func writeEntry(t *testing.T, tw *tar.Writer, name, data string) {
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data))}))
	_, err := tw.Write([]byte(data))
	require.NoError(t, err)
}

func names(files []File) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Name
	}
	return out
}

func find(t *testing.T, files []File, name string) File {
	for _, f := range files {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no file %q in %v", name, names(files))
	return File{}
}

// generated returns n files of YAML-like text that compresses like real manifests.
func generated(n int) []File {
	files := make([]File, n)
	for i := range files {
		files[i] = File{Name: fmt.Sprintf("apps/app-%04d.yaml", i), Data: fmt.Appendf(nil,
			"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-%d\n  namespace: team-%d\nspec:\n  replicas: %d\n", i, i%17, i%5)}
	}
	return files
}
