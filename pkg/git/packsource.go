package git

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// sourcePack is an existing pack a repack copies objects from.
type sourcePack struct {
	hash plumbing.Hash
	file *os.File
	// entries are the pack's objects by offset, so that each one ends where the next begins.
	entries []idxfile.Entry
	// end is where the last object ends, before the pack's trailing checksum.
	end int64
}

// entryEnd is where entry i's compressed data ends.
func (p *sourcePack) entryEnd(i int) int64 {
	if i+1 < len(p.entries) {
		return int64(p.entries[i+1].Offset)
	}
	return p.end
}

// entryAt finds the entry that starts at offset.
func (p *sourcePack) entryAt(offset int64) (int, bool) {
	return slices.BinarySearchFunc(p.entries, offset, func(e idxfile.Entry, off int64) int {
		return cmp.Compare(int64(e.Offset), off)
	})
}

// openPacks opens every pack of packDir with its index. A pack whose index is missing or does
// not match fails the repack: go-git could not read that pack either.
func openPacks(packDir string) ([]*sourcePack, error) {
	dir, err := os.ReadDir(packDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var packs []*sourcePack
	for _, e := range dir {
		if !isPackName(e.Name()) {
			continue
		}
		base := strings.TrimSuffix(e.Name(), ".pack")
		p, err := openPack(filepath.Join(packDir, base), plumbing.NewHash(strings.TrimPrefix(base, "pack-")))
		if err != nil {
			closePacks(packs)
			return nil, fmt.Errorf("read %s: %w", e.Name(), err)
		}
		packs = append(packs, p)
	}
	return packs, nil
}

func openPack(base string, h plumbing.Hash) (*sourcePack, error) {
	idxFile, err := os.Open(base + ".idx")
	if err != nil {
		return nil, err
	}
	idx := idxfile.NewMemoryIndex()
	err = idxfile.NewDecoder(bufio.NewReader(idxFile)).Decode(idx)
	_ = idxFile.Close()
	if err != nil {
		return nil, err
	}
	if idx.PackfileChecksum != h {
		return nil, errors.New("its index belongs to another pack")
	}
	iter, err := idx.Entries()
	if err != nil {
		return nil, err
	}
	p := &sourcePack{hash: h}
	for {
		e, err := iter.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		p.entries = append(p.entries, *e)
	}
	slices.SortFunc(p.entries, func(a, b idxfile.Entry) int { return cmp.Compare(a.Offset, b.Offset) })

	if p.file, err = os.Open(base + ".pack"); err != nil {
		return nil, err
	}
	fi, err := p.file.Stat()
	if err == nil {
		err = checkPackHeader(p.file, len(p.entries))
	}
	if err != nil {
		_ = p.file.Close()
		return nil, err
	}
	p.end = fi.Size() - int64(len(h))
	return p, nil
}

// checkPackHeader checks the pack signature, version and object count against its index.
func checkPackHeader(r io.ReaderAt, objects int) error {
	n, err := packHeaderObjects(r)
	if err == nil && n != objects {
		err = fmt.Errorf("the pack holds %d objects and its index %d", n, objects)
	}
	return err
}

// packHeaderObjects checks the pack signature and version and returns the object count the
// header gives.
func packHeaderObjects(r io.ReaderAt) (int, error) {
	var head [12]byte
	if _, err := r.ReadAt(head[:], 0); err != nil {
		return 0, err
	}
	version := binary.BigEndian.Uint32(head[4:8])
	if !bytes.Equal(head[:4], []byte("PACK")) || (version != 2 && version != 3) {
		return 0, errors.New("not a pack file")
	}
	return int(binary.BigEndian.Uint32(head[8:])), nil
}

func closePacks(packs []*sourcePack) {
	for _, p := range packs {
		_ = p.file.Close()
	}
}

// packedHeader is the header of one object in a pack.
type packedHeader struct {
	typ plumbing.ObjectType
	// size is the object's size, or, for a delta, the size of the delta data.
	size int64
	// length is the header's own length: the compressed data starts after it.
	length int64
	// baseOffset is the base of an OFS_DELTA, baseHash that of a REF_DELTA.
	baseOffset int64
	baseHash   plumbing.Hash
}

var errBadHeader = errors.New("malformed object header")

// readPackedHeader parses the header of the object at offset, as git's pack format defines it:
// type and size as a varint, then the base of a delta.
func readPackedHeader(r io.ReaderAt, offset int64) (packedHeader, error) {
	var buf [64]byte
	n, err := r.ReadAt(buf[:], offset)
	if n == 0 && err != nil {
		return packedHeader{}, err
	}
	b, i := buf[:n], 0
	next := func() (byte, error) {
		if i >= len(b) {
			return 0, errBadHeader
		}
		i++
		return b[i-1], nil
	}
	var h packedHeader
	c, err := next()
	if err != nil {
		return h, err
	}
	h.typ = plumbing.ObjectType((c >> 4) & 7)
	h.size = int64(c & 0x0f)
	for shift := 4; c&0x80 != 0; shift += 7 {
		if c, err = next(); err != nil || shift > 56 {
			return h, errBadHeader
		}
		h.size |= int64(c&0x7f) << shift
	}
	switch h.typ {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
	case plumbing.OFSDeltaObject:
		if c, err = next(); err != nil {
			return h, err
		}
		back := int64(c & 0x7f)
		for c&0x80 != 0 {
			if c, err = next(); err != nil || back >= 1<<55 {
				return h, errBadHeader
			}
			back = (back+1)<<7 | int64(c&0x7f)
		}
		h.baseOffset = offset - back
		if back <= 0 || h.baseOffset < 12 {
			return h, errBadHeader
		}
	case plumbing.REFDeltaObject:
		if i+len(h.baseHash) > len(b) {
			return h, errBadHeader
		}
		i += copy(h.baseHash[:], b[i:])
	default:
		return h, errBadHeader
	}
	h.length = int64(i)
	return h, nil
}

// packedObjectHeader encodes the type and size of an object in a pack.
func packedObjectHeader(t plumbing.ObjectType, size int64) []byte {
	b := []byte{byte(t)<<4 | byte(size&0x0f)}
	for size >>= 4; size != 0; size >>= 7 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(size&0x7f))
	}
	return b
}

// deltaOffset encodes how far back an OFS_DELTA's base starts.
func deltaOffset(back int64) []byte {
	b := []byte{byte(back & 0x7f)}
	for back >>= 7; back != 0; back >>= 7 {
		back--
		b = append([]byte{0x80 | byte(back&0x7f)}, b...)
	}
	return b
}
