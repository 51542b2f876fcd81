package snapshot

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Level is the zstd level of every snapshot, chosen from BenchmarkSnapshot (docs/benchmarks.md):
// on 5 MiB of real CRDs and workloads, SpeedBetterCompression (zstd level 7) is the fastest level
// that stores at least 1.3x less than Helm (1.35x), at about a third of Helm's time. The default
// level is smaller than Helm only by 1.18x, and SpeedBestCompression saves 4% more at over twice
// the time. Snapshots are written once per upgrade and read on a rollback, so size matters more
// than a few hundred milliseconds.
const Level = zstd.SpeedBetterCompression

// File is one manifest file of a snapshot.
type File struct {
	// Name is a clean, relative, slash-separated path, such as "deploy/web.yaml".
	Name string
	Data []byte
}

// Archive is a packed snapshot.
type Archive struct {
	// Compressed is the zstd frame of the tar.
	Compressed []byte
	// Digest is "sha256:<hex>" of the uncompressed tar.
	Digest string
	// Size is the length of the uncompressed tar.
	Size int64
}

// Options bound what a snapshot may hold. The zero value means the defaults.
type Options struct {
	// ChunkBytes is the most archive bytes one Secret holds: DefaultChunkBytes.
	ChunkBytes int
	// MaxChunks is the most Secrets one snapshot may take: DefaultMaxChunks.
	MaxChunks int
	// MaxSize is the largest uncompressed tar accepted by Pack and Unpack: DefaultMaxSize.
	MaxSize int64
	// Level overrides Level; for benchmarks.
	Level zstd.EncoderLevel
}

const (
	// DefaultChunkBytes leaves 1 KiB of the API server's 1 MiB Secret data limit for the key.
	DefaultChunkBytes = 1<<20 - 1<<10
	// DefaultMaxChunks allows about 8 MiB compressed, typically 50 to 100 MiB of YAML.
	DefaultMaxChunks = 8
	// DefaultMaxSize bounds the memory a snapshot takes once decompressed.
	DefaultMaxSize = 256 << 20
)

func (o Options) withDefaults() Options {
	if o.ChunkBytes <= 0 {
		o.ChunkBytes = DefaultChunkBytes
	}
	if o.MaxChunks <= 0 {
		o.MaxChunks = DefaultMaxChunks
	}
	if o.MaxSize <= 0 {
		o.MaxSize = DefaultMaxSize
	}
	if o.Level == 0 {
		o.Level = Level
	}
	return o
}

// ErrInvalidArchive wraps every reason Unpack refuses an archive.
var ErrInvalidArchive = errors.New("invalid snapshot archive")

// epoch is the time of every tar entry, so that a tar depends only on names and bytes.
var epoch = time.Unix(0, 0).UTC()

// Pack writes files as a deterministic tar and compresses it. Names must be valid (see File) and
// unique; their order does not matter.
func Pack(files []File, opts Options) (Archive, error) {
	opts = opts.withDefaults()
	raw, err := canonicalTar(files, opts.MaxSize)
	if err != nil {
		return Archive{}, err
	}
	enc, err := encoder(opts.Level)
	if err != nil {
		return Archive{}, err
	}
	return Archive{
		Compressed: enc.EncodeAll(raw, make([]byte, 0, len(raw)/4)),
		Digest:     digest(raw),
		Size:       int64(len(raw)),
	}, nil
}

// Digest is the digest Pack would give files, without compressing them: a cheap way to tell
// whether a set of manifests changed.
func Digest(files []File, opts Options) (string, error) {
	raw, err := canonicalTar(files, opts.withDefaults().MaxSize)
	if err != nil {
		return "", err
	}
	return digest(raw), nil
}

func canonicalTar(files []File, maxSize int64) ([]byte, error) {
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	var size int64
	for i, f := range sorted {
		if err := validName(f.Name); err != nil {
			return nil, err
		}
		if i > 0 && sorted[i-1].Name == f.Name {
			return nil, fmt.Errorf("file %q appears twice", f.Name)
		}
		size += int64(len(f.Data))
	}
	if size > maxSize {
		return nil, fmt.Errorf("the manifests are %d bytes, over the limit of %d bytes for one snapshot", size, maxSize)
	}
	raw, err := writeTar(sorted)
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > maxSize {
		return nil, fmt.Errorf("the snapshot tar is %d bytes, over the limit of %d bytes", len(raw), maxSize)
	}
	return raw, nil
}

func writeTar(sorted []File) ([]byte, error) {
	var buf bytes.Buffer
	// A header and its padding take at most 2 KiB a file (a long name takes a PAX record).
	size := 2 * 512
	for _, f := range sorted {
		size += len(f.Data) + 2048
	}
	buf.Grow(size)
	tw := tar.NewWriter(&buf)
	for _, f := range sorted {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     f.Name,
			Mode:     0o644,
			Size:     int64(len(f.Data)),
			ModTime:  epoch,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("tar header of %q: %w", f.Name, err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Unpack decompresses an archive, checks it against wantDigest, and returns its files in name
// order. Errors wrap ErrInvalidArchive.
func Unpack(compressed []byte, wantDigest string, opts Options) ([]File, error) {
	opts = opts.withDefaults()
	raw, err := decompress(compressed, opts.MaxSize)
	if err != nil {
		return nil, err
	}
	if got := digest(raw); got != wantDigest {
		return nil, fmt.Errorf("%w: digest %s, expected %s", ErrInvalidArchive, got, wantDigest)
	}
	return readTar(raw)
}

func decompress(compressed []byte, maxSize int64) ([]byte, error) {
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(uint64(maxSize)),
		zstd.WithDecoderMaxWindow(uint64(max(min(maxSize, zstd.MaxWindowSize), zstd.MinWindowSize))))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	raw, err := dec.DecodeAll(compressed, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: zstd: %v", ErrInvalidArchive, err)
	}
	if int64(len(raw)) > maxSize {
		return nil, fmt.Errorf("%w: %d bytes once decompressed, over the limit of %d", ErrInvalidArchive, len(raw), maxSize)
	}
	return raw, nil
}

func readTar(raw []byte) ([]File, error) {
	tr := tar.NewReader(bytes.NewReader(raw))
	var files []File
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: tar: %v", ErrInvalidArchive, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("%w: entry %q is not a regular file", ErrInvalidArchive, hdr.Name)
		}
		if err := validName(hdr.Name); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidArchive, err)
		}
		if n := len(files); n > 0 && files[n-1].Name >= hdr.Name {
			return nil, fmt.Errorf("%w: entry %q is out of order or repeated", ErrInvalidArchive, hdr.Name)
		}
		if hdr.Size > int64(len(raw)) {
			return nil, fmt.Errorf("%w: entry %q claims %d bytes", ErrInvalidArchive, hdr.Name, hdr.Size)
		}
		data := make([]byte, hdr.Size)
		if _, err := io.ReadFull(tr, data); err != nil {
			return nil, fmt.Errorf("%w: entry %q: %v", ErrInvalidArchive, hdr.Name, err)
		}
		files = append(files, File{Name: hdr.Name, Data: data})
	}
}

// validName accepts clean, relative, slash-separated paths without "." or ".." elements.
func validName(name string) error {
	switch {
	case name == "":
		return errors.New("a file has an empty name")
	case strings.HasPrefix(name, "/"), strings.Contains(name, "\\"), strings.ContainsRune(name, 0):
		return fmt.Errorf("file name %q must be relative and slash-separated", name)
	case path.Clean(name) != name, name == ".", name == "..", strings.HasPrefix(name, "../"):
		return fmt.Errorf("file name %q is not a clean relative path", name)
	}
	return nil
}

func digest(raw []byte) string {
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Encoders are safe for concurrent EncodeAll and costly to build, so there is one per level.
var encoders sync.Map // zstd.EncoderLevel -> *zstd.Encoder

func encoder(level zstd.EncoderLevel) (*zstd.Encoder, error) {
	if e, ok := encoders.Load(level); ok {
		return e.(*zstd.Encoder), nil
	}
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	actual, _ := encoders.LoadOrStore(level, e)
	return actual.(*zstd.Encoder), nil
}
