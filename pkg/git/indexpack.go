package git

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// defaultLargePackObjects is the object count above which a fetched pack is indexed by indexPack
// rather than by go-git. go-git's parser keeps a few hundred bytes per object in memory until the
// index is written: 580 MB for the million objects of a 200,000-commit first fetch. indexPack
// keeps about 50 bytes per object. Smaller packs, every fetch after the first in practice, stay
// with go-git, which adds the new index to the open storage instead of reopening it.
const defaultLargePackObjects = 20_000

// packHeaderSize is the size of "PACK", the version and the object count.
const packHeaderSize = 12

// packEntries is what the index says of each object of a pack, in pack order.
type packEntries struct {
	offsets []int64
	crcs    []uint32
	hashes  []plumbing.Hash
	types   []plumbing.ObjectType
	// base is the pack index of an OFS_DELTA's base; noBase for a whole object, refBase for a
	// REF_DELTA, whose base is in refBases by hash.
	base     []int32
	refBases map[plumbing.Hash][]int32
}

const (
	noBase  int32 = -1
	refBase int32 = -2
)

// storeLargePack writes the pack whose header was already read, then the rest of it, into
// packDir, indexes it and puts both in place. The pack is on disk before it is indexed, so that
// memory follows the number of objects, never their size.
func storeLargePack(packDir string, header []byte, rest io.Reader) (err error) {
	written := writtenPack{}
	written.tempPack, err = writeTempFile(packDir, "tmp_pack_fetch_", func(w io.Writer) error {
		if _, err := w.Write(header); err != nil {
			return err
		}
		_, err := io.Copy(w, rest)
		return err
	})
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(written.tempPack)
			if written.tempIndex != "" {
				_ = os.Remove(written.tempIndex)
			}
		}
	}()
	entries, checksum, err := indexPack(written.tempPack)
	if err != nil {
		return err
	}
	written.checksum = checksum
	written.tempIndex, err = writeIndexFile(packDir, len(entries.hashes), func(i int) (plumbing.Hash, int64, uint32) {
		return entries.hashes[i], entries.offsets[i], entries.crcs[i]
	}, checksum)
	if err != nil {
		return err
	}
	_, err = putInPlace(packDir, written, nil)
	return err
}

// indexPack reads the pack at path and returns every object's hash, offset and CRC-32, and the
// pack's checksum, after checking it. A first pass hashes whole objects and notes each delta's
// base; a second resolves the deltas depth first from each base, so that only the contents along
// one chain are in memory at a time.
func indexPack(path string) (*packEntries, plumbing.Hash, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, plumbing.ZeroHash, err
	}
	defer f.Close()
	scan := packfile.NewScanner(f)
	e, err := scanPack(scan)
	if err != nil {
		return nil, plumbing.ZeroHash, fmt.Errorf("index the fetched pack: %w", err)
	}
	checksum, err := scan.Checksum()
	if err != nil {
		return nil, plumbing.ZeroHash, fmt.Errorf("index the fetched pack: %w", err)
	}
	if err := resolveDeltas(e, packfile.NewScanner(f)); err != nil {
		return nil, plumbing.ZeroHash, fmt.Errorf("index the fetched pack: %w", err)
	}
	return e, checksum, nil
}

// scanPack is the first pass: offsets, CRC-32s, whole objects' hashes and deltas' bases.
func scanPack(scan *packfile.Scanner) (*packEntries, error) {
	_, count, err := scan.Header()
	if err != nil {
		return nil, err
	}
	// The header's count is the remote's word: the slices grow as objects actually arrive.
	hint := min(int(count), 1<<20)
	e := &packEntries{
		offsets:  make([]int64, 0, hint),
		crcs:     make([]uint32, 0, hint),
		hashes:   make([]plumbing.Hash, 0, hint),
		types:    make([]plumbing.ObjectType, 0, hint),
		base:     make([]int32, 0, hint),
		refBases: map[plumbing.Hash][]int32{},
	}
	for i := range int(count) {
		h, err := scan.NextObjectHeader()
		if err != nil {
			return nil, err
		}
		base := noBase
		var sink io.Writer = io.Discard
		var hasher plumbing.Hasher
		switch h.Type {
		case plumbing.OFSDeltaObject:
			at, found := slices.BinarySearch(e.offsets, h.OffsetReference)
			if !found {
				return nil, fmt.Errorf("the delta at offset %d names a base at offset %d, where no object starts", h.Offset, h.OffsetReference)
			}
			base = int32(at)
		case plumbing.REFDeltaObject:
			base = refBase
			e.refBases[h.Reference] = append(e.refBases[h.Reference], int32(i))
		case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
			hasher = plumbing.NewHasher(h.Type, h.Length)
			sink = hasher
		default:
			return nil, fmt.Errorf("an object of unknown type %d at offset %d", h.Type, h.Offset)
		}
		_, crc, err := scan.NextObject(sink)
		if err != nil {
			return nil, err
		}
		var hash plumbing.Hash
		if hasher.Hash != nil {
			hash = hasher.Sum()
		}
		e.offsets = append(e.offsets, h.Offset)
		e.crcs = append(e.crcs, crc)
		e.hashes = append(e.hashes, hash)
		e.types = append(e.types, h.Type)
		e.base = append(e.base, base)
	}
	return e, nil
}

// resolveDeltas is the second pass: it gives every delta its type and hash.
func resolveDeltas(e *packEntries, scan *packfile.Scanner) error {
	children := ofsChildren(e.base)
	r := &deltaResolver{e: e, scan: scan, children: children}
	for i, b := range e.base {
		if b != noBase || !r.hasChildren(int32(i)) {
			continue
		}
		data, err := r.inflate(int32(i))
		if err != nil {
			return err
		}
		if err := r.resolveChildren(int32(i), bytes.Clone(data)); err != nil {
			return err
		}
	}
	if r.resolved < r.deltas() {
		return errors.New("the pack holds deltas whose base is not in it (a thin pack, which the fetch did not ask for)")
	}
	return nil
}

// ofsChildren lists each object's OFS_DELTA children, as offsets into one shared slice:
// children.of(i) = list[start[i]:start[i+1]].
func ofsChildren(base []int32) childList {
	start := make([]int32, len(base)+1)
	for _, b := range base {
		if b >= 0 {
			start[b+1]++
		}
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	list := make([]int32, start[len(base)])
	next := slices.Clone(start[:len(base)])
	for i, b := range base {
		if b >= 0 {
			list[next[b]] = int32(i)
			next[b]++
		}
	}
	return childList{start: start, list: list}
}

type childList struct{ start, list []int32 }

func (c childList) of(i int32) []int32 { return c.list[c.start[i]:c.start[i+1]] }

type deltaResolver struct {
	e        *packEntries
	scan     *packfile.Scanner
	children childList
	resolved int
	buf      bytes.Buffer
}

func (r *deltaResolver) deltas() int {
	n := 0
	for _, b := range r.e.base {
		if b != noBase {
			n++
		}
	}
	return n
}

func (r *deltaResolver) hasChildren(i int32) bool {
	return len(r.children.of(i)) > 0 || len(r.e.refBases[r.e.hashes[i]]) > 0
}

// inflate reads object i's data: the content of a whole object, the instructions of a delta.
// The bytes are valid until the next call.
func (r *deltaResolver) inflate(i int32) ([]byte, error) {
	if _, err := r.scan.SeekObjectHeader(r.e.offsets[i]); err != nil {
		return nil, err
	}
	r.buf.Reset()
	if _, _, err := r.scan.NextObject(&r.buf); err != nil {
		return nil, err
	}
	return r.buf.Bytes(), nil
}

// resolveChildren applies each delta on object i, whose content is given, then on down.
func (r *deltaResolver) resolveChildren(i int32, content []byte) error {
	kids := append(slices.Clone(r.children.of(i)), r.e.refBases[r.e.hashes[i]]...)
	delete(r.e.refBases, r.e.hashes[i])
	for _, c := range kids {
		delta, err := r.inflate(c)
		if err != nil {
			return err
		}
		patched, err := packfile.PatchDelta(content, delta)
		if err != nil {
			return fmt.Errorf("the delta at offset %d: %w", r.e.offsets[c], err)
		}
		r.e.types[c] = r.e.types[i]
		r.e.hashes[c] = plumbing.ComputeHash(r.e.types[c], patched)
		r.resolved++
		if r.hasChildren(c) {
			if err := r.resolveChildren(c, patched); err != nil {
				return err
			}
		}
	}
	return nil
}

// sortedByHash is the order of the pack's objects in its index; an object the pack holds twice
// is listed once.
func sortedByHash(hashes []plumbing.Hash) []int32 {
	order := make([]int32, len(hashes))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		return cmp.Or(bytes.Compare(hashes[a][:], hashes[b][:]), cmp.Compare(a, b))
	})
	return slices.CompactFunc(order, func(a, b int32) bool { return hashes[a] == hashes[b] })
}
