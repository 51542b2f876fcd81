// Package images reads what hack/tools/images (`make images`) writes, with the standard library
// only: a reader independent of the go-containerregistry code that wrote the files, so the tests
// check the formats themselves. Every blob read is checked against its digest and size.
package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// OCI media types.
const (
	MediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	MediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	MediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// Descriptor points at a blob.
type Descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *Platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Platform of an index entry.
type Platform struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Variant      string `json:"variant,omitempty"`
}

func (p Platform) String() string {
	if p.Variant != "" {
		return p.OS + "/" + p.Architecture + "/" + p.Variant
	}
	return p.OS + "/" + p.Architecture
}

// Index is an OCI image index, also the shape of a layout's index.json.
type Index struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Manifests     []Descriptor      `json:"manifests"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// Manifest is an OCI image manifest.
type Manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Config        Descriptor        `json:"config"`
	Layers        []Descriptor      `json:"layers"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// Config is the part of an image configuration the tests look at.
type Config struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Variant      string `json:"variant,omitempty"`
	Created      string `json:"created"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		Env        []string          `json:"Env"`
		WorkingDir string            `json:"WorkingDir"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// Layout is an OCI image layout folder.
type Layout string

// Index reads index.json, after checking the oci-layout marker.
func (l Layout) Index() (Index, error) {
	var marker struct {
		Version string `json:"imageLayoutVersion"`
	}
	if err := readJSONFile(filepath.Join(string(l), "oci-layout"), &marker); err != nil {
		return Index{}, err
	}
	if marker.Version != "1.0.0" {
		return Index{}, fmt.Errorf("oci-layout version %q, want 1.0.0", marker.Version)
	}
	var idx Index
	return idx, readJSONFile(filepath.Join(string(l), "index.json"), &idx)
}

// Blob reads the blob d points at and checks its size and digest.
func (l Layout) Blob(d Descriptor) ([]byte, error) {
	hexDigest, ok := strings.CutPrefix(d.Digest, "sha256:")
	if !ok {
		return nil, fmt.Errorf("digest %q is not sha256", d.Digest)
	}
	data, err := os.ReadFile(filepath.Join(string(l), "blobs", "sha256", hexDigest))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != d.Size {
		return nil, fmt.Errorf("blob %s is %d bytes, its descriptor says %d", d.Digest, len(data), d.Size)
	}
	if got := Digest(data); got != d.Digest {
		return nil, fmt.Errorf("blob %s has digest %s", d.Digest, got)
	}
	return data, nil
}

// JSON reads the blob d points at into v.
func (l Layout) JSON(d Descriptor, v any) error {
	data, err := l.Blob(d)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// Digest is the sha256 digest of data in OCI form.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func readJSONFile(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// File is one entry of a layer.
type File struct {
	Header tar.Header
	Data   []byte
}

// Layer reads a gzipped layer tar into memory and returns its entries and the digest of the
// uncompressed tar (the config's diff ID).
func Layer(compressed []byte) ([]File, string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(compressed))
	if err != nil {
		return nil, "", err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, "", err
	}
	files, err := TarFiles(raw)
	return files, Digest(raw), err
}

// TarFiles lists the entries of a tar with their content.
func TarFiles(raw []byte) ([]File, error) {
	var files []File
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Header: *hdr, Data: data})
	}
}
