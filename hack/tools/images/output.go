package main

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Entry records one built image in images.json: where each file is and what it holds. A later
// run reuses the files while Key is unchanged.
type Entry struct {
	Name string `json:"name"`
	// Ref is the image's name and tag, as recorded in the archives.
	Ref string `json:"ref"`
	// Digest is the digest of the multi-arch index, the one to pin (image.digest) and sign.
	Digest string `json:"digest"`
	// Platforms maps each platform to the digest of its image manifest.
	Platforms map[string]string `json:"platforms"`
	// Layout is a folder holding an OCI image layout: `crane push <layout> <ref>`.
	Layout string `json:"layout"`
	// OCIArchive is that layout as a tar: `ctr -n k8s.io images import`, `kind load image-archive`.
	OCIArchive string `json:"ociArchive"`
	// DockerArchives are one single-platform `docker save` tarball per platform: `docker load`.
	DockerArchives map[string]string `json:"dockerArchives"`
	// LayerBytes is the compressed size of the one layer per platform.
	LayerBytes map[string]int64 `json:"layerBytes"`
	Key        string           `json:"key"`
}

// Manifest is images.json, the index of the output folder.
type Manifest struct {
	Version  string  `json:"version"`
	Revision string  `json:"revision"`
	Created  string  `json:"created"`
	Images   []Entry `json:"images"`
}

const manifestFile = "images.json"

func readManifest(out string) Manifest {
	var m Manifest
	data, err := os.ReadFile(filepath.Join(out, manifestFile))
	if err == nil {
		_ = json.Unmarshal(data, &m) // an unreadable manifest only means a full rebuild
	}
	return m
}

func writeManifest(out string, m Manifest) error {
	sort.Slice(m.Images, func(i, j int) bool { return m.Images[i].Name < m.Images[j].Name })
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(out, manifestFile), append(data, '\n'))
}

// complete reports whether every file of e is still in out.
func (e Entry) complete(out string) bool {
	files := []string{e.Layout, e.OCIArchive}
	for _, f := range e.DockerArchives {
		files = append(files, f)
	}
	for _, f := range files {
		if f == "" {
			return false
		}
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			return false
		}
	}
	return true
}

// writeLayout writes idx as an OCI image layout folder at dir, named ref for containerd (which
// reads io.containerd.image.name) and tag for OCI tools (org.opencontainers.image.ref.name).
func writeLayout(dir string, idx v1.ImageIndex, ref name.Tag) error {
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"io.containerd.image.name":          ref.Name(),
		"org.opencontainers.image.ref.name": ref.TagStr(),
	}))
}

// writeDockerArchive writes img as a `docker save` tarball tagged ref.
func writeDockerArchive(path string, ref name.Tag, img v1.Image) error {
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// tarFolder writes the files under dir into a tar at path, sorted, with fixed owners, modes and
// times, so the same layout always gives the same archive.
func tarFolder(path, dir string, mtime time.Time) error {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(files)
	tmp := path + ".tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer out.Close()
	tw := tar.NewWriter(out)
	for _, f := range files {
		if err := addFile(tw, dir, f, mtime); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func addFile(tw *tar.Writer, dir, file string, mtime time.Time) error {
	rel, err := filepath.Rel(dir, file)
	if err != nil {
		return err
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: filepath.ToSlash(rel), Mode: 0o644, Size: info.Size(), ModTime: mtime}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("archive %s: %w", file, err)
	}
	return nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
