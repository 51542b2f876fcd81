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
	pl := &planner{
		plan:    &packPlan{index: make(map[plumbing.Hash]int32, len(want))},
		packs:   packs,
		located: locatePacked(packs),
		loose:   loose,
	}
	for _, h := range want {
		if _, err := pl.add(h); err != nil {
			return nil, err
		}
	}
	pl.plan.orderBasesFirst()
	return pl.plan, nil
}

// packLocation is where an object is in the old packs: packs[pack].entries[entry].
type packLocation struct{ pack, entry int32 }

// locatePacked finds each packed object; one in several packs is taken from the first.
func locatePacked(packs []*sourcePack) map[plumbing.Hash]packLocation {
	located := map[plumbing.Hash]packLocation{}
	for pi, p := range packs {
		for ei, e := range p.entries {
			if _, ok := located[e.Hash]; !ok {
				located[e.Hash] = packLocation{int32(pi), int32(ei)}
			}
		}
	}
	return located
}

// planner builds a packPlan, one object and its chain of delta bases at a time.
type planner struct {
	plan    *packPlan
	packs   []*sourcePack
	located map[plumbing.Hash]packLocation
	loose   map[plumbing.Hash]string
}

// add plans object h, and then its delta base, unless it is planned already, and returns its
// index in plan.objects.
func (pl *planner) add(h plumbing.Hash) (int32, error) {
	if i, ok := pl.plan.index[h]; ok {
		return i, nil
	}
	i := int32(len(pl.plan.objects))
	pl.plan.index[h] = i
	o := plannedObject{hash: h, base: -1}
	var base plumbing.Hash
	if at, packed := pl.located[h]; packed {
		var err error
		if base, err = pl.readPacked(&o, at); err != nil {
			return 0, err
		}
	} else if _, isLoose := pl.loose[h]; isLoose {
		o.source = fromLoose
	} else {
		return 0, fmt.Errorf("object %s is neither in a pack nor loose", h)
	}
	pl.plan.objects = append(pl.plan.objects, o)
	if !base.IsZero() {
		b, err := pl.add(base)
		if err != nil {
			return 0, err
		}
		pl.plan.objects[i].base = b
	}
	return i, nil
}

// readPacked fills in o, found at at, from its header in the pack, and returns the hash of its
// delta base, zero for a whole object.
func (pl *planner) readPacked(o *plannedObject, at packLocation) (base plumbing.Hash, err error) {
	p := pl.packs[at.pack]
	e := p.entries[at.entry]
	hdr, err := readPackedHeader(p.file, int64(e.Offset))
	if err != nil {
		return base, fmt.Errorf("pack-%s, object %s: %w", p.hash, o.hash, err)
	}
	o.pack, o.entry, o.typ, o.size, o.data = at.pack, at.entry, hdr.typ, hdr.size, int64(e.Offset)+hdr.length
	switch hdr.typ {
	case plumbing.OFSDeltaObject:
		j, ok := p.entryAt(hdr.baseOffset)
		if !ok {
			return base, fmt.Errorf("pack-%s, object %s: no object at its base offset %d", p.hash, o.hash, hdr.baseOffset)
		}
		base = p.entries[j].Hash
	case plumbing.REFDeltaObject:
		// The base may be in another pack (a thin pack stored as received), or loose.
		base = hdr.baseHash
	}
	return base, nil
}

// orderBasesFirst sets plan.order so that every delta comes after its base. A delta whose chain
// of bases loops back to itself (possible across packs) is written whole instead, fromStorage.
func (plan *packPlan) orderBasesFirst() {
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
	var offsets []int64
	var crcs []uint32
	res.tempPack, err = writeTempFile(packDir, "tmp_pack_repack_", func(w io.Writer) (err error) {
		offsets, crcs, res.checksum, err = writePackObjects(w, plan, packs, loose, sto)
		return err
	})
	if err != nil {
		return res, err
	}
	if res.tempIndex, err = writePackIndex(packDir, plan, offsets, crcs, res.checksum); err != nil {
		_ = os.Remove(res.tempPack)
	}
	return res, err
}

// writeTempFile writes a new file into dir, named from pattern as by os.CreateTemp, through a
// buffer, syncs it and returns its name. When any step fails, the file is removed.
func writeTempFile(dir, pattern string, write func(io.Writer) error) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	// writePackObjects asks for a buffer of the same size, and so writes through this one.
	w := bufio.NewWriterSize(f, 256<<10)
	err = write(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// writePackObjects writes the pack's header, its objects in plan.order and its checksum to pack,
// and returns what the index says of each object of plan.objects (its offset in the pack and
// the CRC-32 of its bytes there) and the checksum.
func writePackObjects(pack io.Writer, plan *packPlan, packs []*sourcePack, loose map[plumbing.Hash]string, sto storage.Storer) (offsets []int64, crcs []uint32, checksum plumbing.Hash, err error) {
	out := &packOutput{buf: bufio.NewWriterSize(pack, 256<<10), sum: sha1.New(), crc: crc32.NewIEEE()}
	head := []byte("PACK\x00\x00\x00\x02\x00\x00\x00\x00")
	binary.BigEndian.PutUint32(head[8:], uint32(len(plan.objects)))
	if _, err := out.Write(head); err != nil {
		return nil, nil, checksum, err
	}
	offsets = make([]int64, len(plan.objects))
	crcs = make([]uint32, len(plan.objects))
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
			return nil, nil, checksum, err
		}
		crcs[i] = out.crc.Sum32()
	}
	copy(checksum[:], out.sum.Sum(nil))
	if _, err := out.buf.Write(checksum[:]); err != nil {
		return nil, nil, checksum, err
	}
	return offsets, crcs, checksum, out.buf.Flush()
}

// writePackIndex writes the index of the pack into packDir under a temporary name, synced, and
// returns that name.
func writePackIndex(packDir string, plan *packPlan, offsets []int64, crcs []uint32, checksum plumbing.Hash) (string, error) {
	return writeIndexFile(packDir, len(plan.objects), func(i int) (plumbing.Hash, int64, uint32) {
		return plan.objects[i].hash, offsets[i], crcs[i]
	}, checksum)
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
