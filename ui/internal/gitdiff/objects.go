package gitdiff

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	fdiff "github.com/go-git/go-git/v5/plumbing/format/diff"
	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"
	"sigs.k8s.io/yaml"

	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/snapshot"
)

// Objects is the per-object diff of two sets of manifest files (two snapshots of a
// ManifestRelease): each object, named as kind.group/namespace/name, is written as YAML with
// sorted keys and diffed with the same object in the other set, so a change of file layout or
// key order is no change. A file that does not parse is diffed as text, under its file name.
func Objects(ctx context.Context, from, to []snapshot.File, lim Limits) (Result, error) {
	lim = lim.WithDefaults()
	old, cur := objectTexts(from), objectTexts(to)
	all := maps.Clone(old)
	maps.Copy(all, cur)
	names := slices.Sorted(maps.Keys(all))
	names = slices.DeleteFunc(names, func(n string) bool { return old[n] == cur[n] })
	return collect(ctx, len(names), func(i int) (File, error) {
		return textDiff(names[i], old[names[i]], cur[names[i]], lim.FileBytes)
	}, lim)
}

// objectTexts writes each object of files as YAML, by its name.
func objectTexts(files []snapshot.File) map[string]string {
	out := map[string]string{}
	for _, f := range files {
		objs, err := manifest.ParseFile(f.Name, f.Data)
		if err != nil {
			out[fmt.Sprintf("file %s (not parsed: %v)", f.Name, err)] = string(f.Data)
			continue
		}
		for _, o := range objs {
			text, err := yaml.Marshal(o.Object)
			if err != nil {
				text = []byte(err.Error())
			}
			out[manifest.RefOf(o).String()] = string(text)
		}
	}
	return out
}

// textDiff is the unified diff of one object's text, "" meaning absent, through go-git's encoder.
func textDiff(name, old, cur string, maxBytes int64) (File, error) {
	f := File{Name: name, Status: "modified"}
	p := &textFilePatch{}
	switch {
	case old == "":
		f.Status = "added"
	case cur == "":
		f.Status = "deleted"
	}
	if old != "" {
		p.from = textFile{name, plumbing.ComputeHash(plumbing.BlobObject, []byte(old))}
	}
	if cur != "" {
		p.to = textFile{name, plumbing.ComputeHash(plumbing.BlobObject, []byte(cur))}
	}
	if int64(len(old)) > maxBytes || int64(len(cur)) > maxBytes {
		f.TooLarge = true
		return f, nil
	}
	for _, d := range diff.Do(old, cur) {
		op := fdiff.Equal
		switch d.Type {
		case diffmatchpatch.DiffInsert:
			op = fdiff.Add
		case diffmatchpatch.DiffDelete:
			op = fdiff.Delete
		}
		p.chunks = append(p.chunks, textChunk{d.Text, op})
	}
	var err error
	f.Lines, err = unified(textPatch{p})
	return f, err
}

type textFile struct {
	path string
	hash plumbing.Hash
}

func (f textFile) Hash() plumbing.Hash     { return f.hash }
func (f textFile) Mode() filemode.FileMode { return filemode.Regular }
func (f textFile) Path() string            { return f.path }

type textChunk struct {
	content string
	op      fdiff.Operation
}

func (c textChunk) Content() string       { return c.content }
func (c textChunk) Type() fdiff.Operation { return c.op }

// textFilePatch is one object's change; a missing side is a nil File, as go-git's encoder wants.
type textFilePatch struct {
	from, to fdiff.File
	chunks   []fdiff.Chunk
}

func (p *textFilePatch) IsBinary() bool                  { return false }
func (p *textFilePatch) Files() (fdiff.File, fdiff.File) { return p.from, p.to }
func (p *textFilePatch) Chunks() []fdiff.Chunk           { return p.chunks }

type textPatch struct{ fp *textFilePatch }

func (p textPatch) FilePatches() []fdiff.FilePatch { return []fdiff.FilePatch{p.fp} }
func (p textPatch) Message() string                { return "" }
