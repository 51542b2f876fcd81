package git

import (
	"crypto/sha1"
	"encoding/binary"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
)

// idxHeader is the magic number and version of a pack index, version 2.
var idxHeader = []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}

// maxSmallOffset is the largest pack offset an index stores in its 32-bit table; larger ones go
// to the 64-bit table.
const maxSmallOffset = 0x7fffffff

// writeIndexFile writes the version 2 index of a pack of n objects into packDir under a temporary
// name, synced, and returns that name. entry gives object i's hash, offset and CRC-32. Unlike
// go-git's idxfile.Writer, which builds maps of every object, it keeps one int32 per object
// besides what the caller holds.
func writeIndexFile(packDir string, n int, entry func(i int) (plumbing.Hash, int64, uint32), packChecksum plumbing.Hash) (string, error) {
	return writeTempFile(packDir, "tmp_idx_", func(w io.Writer) error {
		return encodeIndex(w, n, entry, packChecksum)
	})
}

// encodeIndex writes the index as git's index-pack does: hashes sorted, each once.
func encodeIndex(out io.Writer, n int, entry func(i int) (plumbing.Hash, int64, uint32), packChecksum plumbing.Hash) error {
	hashes := make([]plumbing.Hash, n)
	for i := range n {
		hashes[i], _, _ = entry(i)
	}
	order := sortedByHash(hashes)
	hashes = nil

	sum := sha1.New()
	w := io.MultiWriter(out, sum)
	var word [8]byte
	put32 := func(v uint32) error {
		binary.BigEndian.PutUint32(word[:4], v)
		_, err := w.Write(word[:4])
		return err
	}
	if _, err := w.Write(idxHeader); err != nil {
		return err
	}
	var fanout [256]uint32
	for _, i := range order {
		h, _, _ := entry(int(i))
		fanout[h[0]]++
	}
	var total uint32
	for b := range fanout {
		total += fanout[b]
		if err := put32(total); err != nil {
			return err
		}
	}
	for _, i := range order {
		h, _, _ := entry(int(i))
		if _, err := w.Write(h[:]); err != nil {
			return err
		}
	}
	for _, i := range order {
		_, _, crc := entry(int(i))
		if err := put32(crc); err != nil {
			return err
		}
	}
	var large []uint64
	for _, i := range order {
		_, offset, _ := entry(int(i))
		small := uint32(offset)
		if offset > maxSmallOffset {
			small = 1<<31 | uint32(len(large))
			large = append(large, uint64(offset))
		}
		if err := put32(small); err != nil {
			return err
		}
	}
	for _, offset := range large {
		binary.BigEndian.PutUint64(word[:], offset)
		if _, err := w.Write(word[:]); err != nil {
			return err
		}
	}
	if _, err := w.Write(packChecksum[:]); err != nil {
		return err
	}
	_, err := out.Write(sum.Sum(nil))
	return err
}
