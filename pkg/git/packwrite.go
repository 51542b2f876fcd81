package git

import (
	"bufio"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
	"github.com/go-git/go-git/v5/storage"
)

// objectSource is where the new pack takes an object from.
type objectSource uint8

const (
	// fromPack copies the object's compressed bytes from an old pack, a delta staying a delta.
	fromPack objectSource = iota
	// fromLoose recompresses a loose object.
	fromLoose
	// fromStorage writes the object whole as go-git reads it: for a delta whose chain of bases,
	// mixed from several packs, loops back to itself.
	fromStorage
)

// plannedObject is one object of the new pack.
type plannedObject struct {
	hash   plumbing.Hash
	source objectSource
	// With fromPack: where the object is, and its header there.
	pack, entry int32
	typ         plumbing.ObjectType
	size        int64
	data        int64
	// base is the index of a delta's base in packPlan.objects, -1 for a whole object.
	base int32
}

// packPlan is the content of the new pack: the reachable objects, and the bases of those stored
// as deltas (which may be objects no ref reaches any more).
type packPlan struct {
	objects []plannedObject
	index   map[plumbing.Hash]int32
	// order writes every delta after its base, as an OFS_DELTA needs.
	order []int32
}

// planPack finds where each object of want is, and the delta bases they need.
func planPack(want []plumbing.Hash, packs []*sourcePack, loose map[plumbing.Hash]string) (*packPlan, error) {
	type location struct{ pack, entry int32 }
	located := map[plumbing.Hash]location{}
	for pi, p := range packs {
		for ei, e := range p.entries {
			if _, ok := located[e.Hash]; !ok {
				located[e.Hash] = location{int32(pi), int32(ei)}
			}
		}
	}

	plan := &packPlan{index: make(map[plumbing.Hash]int32, len(want))}
	var add func(h plumbing.Hash) (int32, error)
	add = func(h plumbing.Hash) (int32, error) {
		if i, ok := plan.index[h]; ok {
			return i, nil
		}
		i := int32(len(plan.objects))
		plan.index[h] = i
		o := plannedObject{hash: h, base: -1}
		at, packed := located[h]
		if _, isLoose := loose[h]; !packed && isLoose {
			o.source = fromLoose
		}
		if !packed && o.source != fromLoose {
			return 0, fmt.Errorf("object %s is neither in a pack nor loose", h)
		}
		var base plumbing.Hash
		if packed {
			p := packs[at.pack]
			e := p.entries[at.entry]
			hdr, err := readPackedHeader(p.file, int64(e.Offset))
			if err != nil {
				return 0, fmt.Errorf("pack-%s, object %s: %w", p.hash, h, err)
			}
			o.pack, o.entry, o.typ, o.size, o.data = at.pack, at.entry, hdr.typ, hdr.size, int64(e.Offset)+hdr.length
			switch hdr.typ {
			case plumbing.OFSDeltaObject:
				j, ok := p.entryAt(hdr.baseOffset)
				if !ok {
					return 0, fmt.Errorf("pack-%s, object %s: no object at its base offset %d", p.hash, h, hdr.baseOffset)
				}
				base = p.entries[j].Hash
			case plumbing.REFDeltaObject:
				// The base may be in another pack (a thin pack stored as received), or loose.
				base = hdr.baseHash
			}
		}
		plan.objects = append(plan.objects, o)
		if !base.IsZero() {
			b, err := add(base)
			if err != nil {
				return 0, err
			}
			plan.objects[i].base = b
		}
		return i, nil
	}
	for _, h := range want {
		if _, err := add(h); err != nil {
			return nil, err
		}
	}

	const (
		unseen = iota
		visiting
		done
	)
	state := make([]uint8, len(plan.objects))
	plan.order = make([]int32, 0, len(plan.objects))
	var visit func(i int32)
	visit = func(i int32) {
		if state[i] != unseen {
			return
		}
		state[i] = visiting
		if b := plan.objects[i].base; b >= 0 {
			if state[b] == visiting {
				plan.objects[i].source, plan.objects[i].base = fromStorage, -1
			} else {
				visit(b)
			}
		}
		state[i] = done
		plan.order = append(plan.order, i)
	}
	for i := range plan.objects {
		visit(int32(i))
	}
	return plan, nil
}

// writtenPack is a new pack and its index under their temporary names.
type writtenPack struct {
	checksum            plumbing.Hash
	tempPack, tempIndex string
}

// packOutput writes a pack, keeping its checksum, the CRC-32 of the current entry and the offset.
type packOutput struct {
	buf    *bufio.Writer
	sum    hash.Hash
	crc    hash.Hash32
	offset int64
}

func (w *packOutput) Write(p []byte) (int, error) {
	n, err := w.buf.Write(p)
	w.sum.Write(p[:n])
	w.crc.Write(p[:n])
	w.offset += int64(n)
	return n, err
}

// writePack writes the planned pack and its index into packDir under temporary names, synced.
func writePack(packDir string, plan *packPlan, packs []*sourcePack, loose map[plumbing.Hash]string, sto storage.Storer) (res writtenPack, err error) {
	pack, err := os.CreateTemp(packDir, "tmp_pack_repack_")
	if err != nil {
		return res, err
	}
	res.tempPack = pack.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(res.tempPack)
			if res.tempIndex != "" {
				_ = os.Remove(res.tempIndex)
			}
		}
	}()

	out := &packOutput{buf: bufio.NewWriterSize(pack, 256<<10), sum: sha1.New(), crc: crc32.NewIEEE()}
	head := []byte("PACK\x00\x00\x00\x02\x00\x00\x00\x00")
	binary.BigEndian.PutUint32(head[8:], uint32(len(plan.objects)))
	if _, err := out.Write(head); err != nil {
		_ = pack.Close()
		return res, err
	}
	offsets := make([]int64, len(plan.objects))
	crcs := make([]uint32, len(plan.objects))
	zw := zlib.NewWriter(nil)
	buf := make([]byte, 64<<10)
	for _, i := range plan.order {
		o := &plan.objects[i]
		offsets[i] = out.offset
		out.crc.Reset()
		switch {
		case o.source == fromPack:
			err = copyPacked(out, o, packs[o.pack], offsets, buf)
		case o.source == fromLoose:
			err = copyLoose(out, zw, o, loose[o.hash], buf)
		default:
			err = copyDecoded(out, zw, o, sto, buf)
		}
		if err != nil {
			_ = pack.Close()
			return res, err
		}
		crcs[i] = out.crc.Sum32()
	}
	copy(res.checksum[:], out.sum.Sum(nil))
	if _, err = out.buf.Write(res.checksum[:]); err == nil {
		err = out.buf.Flush()
	}
	if err == nil {
		err = pack.Sync()
	}
	if cerr := pack.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return res, err
	}

	iw := new(idxfile.Writer)
	_ = iw.OnHeader(uint32(len(plan.objects)))
	for i, o := range plan.objects {
		iw.Add(o.hash, uint64(offsets[i]), crcs[i])
	}
	if err = iw.OnFooter(res.checksum); err != nil {
		return res, err
	}
	idx, err := iw.Index()
	if err != nil {
		return res, err
	}
	index, err := os.CreateTemp(packDir, "tmp_idx_")
	if err != nil {
		return res, err
	}
	res.tempIndex = index.Name()
	idxBuf := bufio.NewWriter(index)
	if _, err = idxfile.NewEncoder(idxBuf).Encode(idx); err == nil {
		err = idxBuf.Flush()
	}
	if err == nil {
		err = index.Sync()
	}
	if cerr := index.Close(); err == nil {
		err = cerr
	}
	return res, err
}

// copyPacked copies an object's compressed bytes from an old pack, checking them against the
// CRC-32 the old index holds. A delta is written as an OFS_DELTA on its base, already written.
func copyPacked(out *packOutput, o *plannedObject, p *sourcePack, offsets []int64, buf []byte) error {
	e := p.entries[o.entry]
	var header []byte
	if o.base >= 0 {
		header = append(packedObjectHeader(plumbing.OFSDeltaObject, o.size), deltaOffset(out.offset-offsets[o.base])...)
	} else {
		header = packedObjectHeader(o.typ, o.size)
	}
	if _, err := out.Write(header); err != nil {
		return err
	}
	crc := crc32.NewIEEE()
	if _, err := p.file.ReadAt(buf[:o.data-int64(e.Offset)], int64(e.Offset)); err != nil {
		return err
	}
	crc.Write(buf[:o.data-int64(e.Offset)])
	data := io.NewSectionReader(p.file, o.data, p.entryEnd(int(o.entry))-o.data)
	if _, err := io.CopyBuffer(out, io.TeeReader(data, crc), buf); err != nil {
		return err
	}
	if crc.Sum32() != e.CRC32 {
		return fmt.Errorf("pack-%s: object %s is damaged (CRC mismatch)", p.hash, o.hash)
	}
	return nil
}

// copyLoose compresses a loose object into the pack, checking its hash on the way.
func copyLoose(out *packOutput, zw *zlib.Writer, o *plannedObject, path string, buf []byte) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := objfile.NewReader(f)
	if err != nil {
		return fmt.Errorf("loose object %s: %w", o.hash, err)
	}
	defer r.Close()
	typ, size, err := r.Header()
	if err != nil {
		return fmt.Errorf("loose object %s: %w", o.hash, err)
	}
	if err := compressInto(out, zw, typ, size, r, buf); err != nil {
		return fmt.Errorf("loose object %s: %w", o.hash, err)
	}
	if r.Hash() != o.hash {
		return fmt.Errorf("loose object %s is damaged (its content hashes to %s)", o.hash, r.Hash())
	}
	return nil
}

// copyDecoded writes an object whole, as go-git reads it.
func copyDecoded(out *packOutput, zw *zlib.Writer, o *plannedObject, sto storage.Storer, buf []byte) error {
	obj, err := sto.EncodedObject(plumbing.AnyObject, o.hash)
	if err != nil {
		return fmt.Errorf("read object %s: %w", o.hash, err)
	}
	r, err := obj.Reader()
	if err != nil {
		return fmt.Errorf("read object %s: %w", o.hash, err)
	}
	defer r.Close()
	hasher := plumbing.NewHasher(obj.Type(), obj.Size())
	if err := compressInto(out, zw, obj.Type(), obj.Size(), io.TeeReader(r, hasher), buf); err != nil {
		return fmt.Errorf("object %s: %w", o.hash, err)
	}
	if hasher.Sum() != o.hash {
		return fmt.Errorf("object %s is damaged", o.hash)
	}
	return nil
}

func compressInto(out *packOutput, zw *zlib.Writer, typ plumbing.ObjectType, size int64, content io.Reader, buf []byte) error {
	if _, err := out.Write(packedObjectHeader(typ, size)); err != nil {
		return err
	}
	zw.Reset(out)
	n, err := io.CopyBuffer(zw, content, buf)
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("%d bytes of content where the header says %d", n, size)
	}
	return zw.Close()
}
