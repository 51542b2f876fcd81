package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// layoutVersion changes whenever this tool changes what it writes for the same inputs, so
// images cached by an older version are rebuilt.
const layoutVersion = "sluice-images/1"

// Run builds every selected image whose key changed and writes images.json.
func Run(ctx context.Context, cfg Config) (Manifest, error) {
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return Manifest{}, err
	}
	unlock, err := lock(filepath.Join(cfg.Out, ".lock"))
	if err != nil {
		return Manifest{}, err
	}
	defer unlock()
	specs, err := selectSpecs(cfg.Specs, cfg.Only)
	if err != nil {
		return Manifest{}, err
	}
	b := Builder{Root: cfg.Root, Stamp: cfg.Stamp}
	keys, err := imageKeys(ctx, b, cfg, specs)
	if err != nil {
		return Manifest{}, err
	}
	prev := readManifest(cfg.Out)
	next := Manifest{Version: cfg.Stamp.Version, Revision: cfg.Stamp.Revision, Created: cfg.Stamp.Created.Format(time.RFC3339)}
	var stale []Spec
	for _, e := range prev.Images {
		if !contains(specs, e.Name) && e.complete(cfg.Out) {
			next.Images = append(next.Images, e) // not asked for this time: kept as it was
		}
	}
	for _, s := range specs {
		if e, ok := prev.find(s.Name); ok && e.Key == keys[s.Name] && e.complete(cfg.Out) {
			cfg.Progress("%s: unchanged, kept %s", s.Name, e.Digest)
			next.Images = append(next.Images, e)
			continue
		}
		stale = append(stale, s)
	}
	built, err := buildImages(ctx, b, cfg, stale, keys)
	if err != nil {
		return Manifest{}, err
	}
	next.Images = append(next.Images, built...)
	return next, writeManifest(cfg.Out, next)
}

func buildImages(ctx context.Context, b Builder, cfg Config, specs []Spec, keys map[string]string) ([]Entry, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	tmp, err := os.MkdirTemp(cfg.Out, ".build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	for _, group := range groups(specs) {
		for _, p := range cfg.Platforms {
			cfg.Progress("go build %d binaries for %s", len(group), p)
			if err := b.Build(ctx, group, p, filepath.Join(tmp, p.slug())); err != nil {
				return nil, err
			}
		}
	}
	var entries []Entry
	for _, s := range specs {
		e, err := writeImage(cfg, s, tmp, keys[s.Name])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		cfg.Progress("%s: built %s", s.Name, e.Digest)
		entries = append(entries, e)
	}
	return entries, nil
}

// imageKeys combines, per image, the keys of its binaries with everything else that goes into the
// image: its name, labels and platforms.
func imageKeys(ctx context.Context, b Builder, cfg Config, specs []Spec) (map[string]string, error) {
	binKeys := map[string][]string{}
	for _, group := range groups(specs) {
		for _, p := range cfg.Platforms {
			keys, err := b.Keys(ctx, group, p)
			if err != nil {
				return nil, err
			}
			for name, k := range keys {
				binKeys[name] = append(binKeys[name], p.String()+"="+k)
			}
		}
	}
	out := map[string]string{}
	for _, s := range specs {
		stamp, tag := cfg.stampOf(s)
		data, err := json.Marshal(struct {
			Format, Registry, Tag, User string
			Binaries                    []string
			Labels                      map[string]string
		}{layoutVersion, cfg.Registry, tag, User, binKeys[s.Name], Labels(s, stamp, cfg.Source, cfg.License)})
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		out[s.Name] = hex.EncodeToString(sum[:])
	}
	return out, nil
}

// groups splits specs into sets one `go build` can build together.
func groups(specs []Spec) [][]Spec {
	type groupKey struct {
		dir       string
		workspace bool
		prebuilt  bool
	}
	index := map[groupKey]int{}
	var out [][]Spec
	for _, s := range specs {
		k := groupKey{s.Dir, s.Workspace, s.Binary != ""}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], s)
	}
	return out
}

// writeImage assembles the image of spec from the binaries in tmp and writes its files.
func writeImage(cfg Config, spec Spec, tmp, key string) (Entry, error) {
	stamp, tag := cfg.stampOf(spec)
	ref, err := name.NewTag(fmt.Sprintf("%s/%s:%s", cfg.Registry, spec.Name, tag))
	if err != nil {
		return Entry{}, err
	}
	labels := Labels(spec, stamp, cfg.Source, cfg.License)
	e := Entry{Name: spec.Name, Ref: ref.String(), Key: key, Layout: spec.Name, OCIArchive: spec.Name + ".oci.tar",
		Platforms: map[string]string{}, DockerArchives: map[string]string{}, LayerBytes: map[string]int64{}}
	images := map[Platform]v1.Image{}
	for _, p := range cfg.Platforms {
		layerFile := filepath.Join(tmp, p.slug(), spec.Name+".tar.gz")
		if err := writeLayer(layerFile, filepath.Join(tmp, p.slug(), spec.Name), spec.Name, stamp.Created); err != nil {
			return Entry{}, err
		}
		img, err := platformImage(spec, p, layerFile, stamp.Created, labels)
		if err != nil {
			return Entry{}, err
		}
		images[p] = img
		if err := e.recordPlatform(img, p); err != nil {
			return Entry{}, err
		}
		e.DockerArchives[p.String()] = fmt.Sprintf("%s-%s.tar", spec.Name, p.slug())
		if err := writeDockerArchive(filepath.Join(cfg.Out, e.DockerArchives[p.String()]), ref, img); err != nil {
			return Entry{}, err
		}
	}
	idx := imageIndex(images, cfg.Platforms, labels)
	digest, err := idx.Digest()
	if err != nil {
		return Entry{}, err
	}
	e.Digest = digest.String()
	return e, replaceLayout(cfg.Out, tmp, e, idx, ref, stamp.Created)
}

func (e *Entry) recordPlatform(img v1.Image, p Platform) error {
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	size, err := layers[0].Size()
	if err != nil {
		return err
	}
	e.Platforms[p.String()] = digest.String()
	e.LayerBytes[p.String()] = size
	return nil
}

// replaceLayout writes the layout folder and its tar beside the old ones, then swaps them in.
func replaceLayout(out, tmp string, e Entry, idx v1.ImageIndex, ref name.Tag, created time.Time) error {
	dir := filepath.Join(tmp, e.Layout)
	if err := writeLayout(dir, idx, ref); err != nil {
		return err
	}
	if err := tarFolder(filepath.Join(out, e.OCIArchive), dir, created); err != nil {
		return err
	}
	final := filepath.Join(out, e.Layout)
	if err := os.RemoveAll(final); err != nil {
		return err
	}
	return os.Rename(dir, final)
}

func (m Manifest) find(name string) (Entry, bool) {
	for _, e := range m.Images {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

func contains(specs []Spec, name string) bool {
	for _, s := range specs {
		if s.Name == name {
			return true
		}
	}
	return false
}

// lock holds an exclusive lock on path until the returned function runs, so two builds into
// one folder (make images beside make test) take turns.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

func printSummary(w io.Writer, cfg Config, m Manifest, elapsed time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tINDEX DIGEST\tCOMPRESSED LAYER")
	for _, e := range m.Images {
		var sizes string
		for _, p := range cfg.Platforms {
			sizes += fmt.Sprintf("%s %.1f MB  ", p.Arch, float64(e.LayerBytes[p.String()])/1e6)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Ref, e.Digest, sizes)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "in %s (%s); files listed in %s\n", cfg.Out, elapsed.Round(100*time.Millisecond), filepath.Join(cfg.Out, manifestFile))
}
