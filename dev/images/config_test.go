package images

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each image is an OCI index of linux/amd64 and linux/arm64 images, each one layer holding only
// its static binary, run as 65532:65532, with the OCI labels, named for containerd and OCI tools.
func TestEveryImageIsMultiArchAndHoldsOnlyItsStaticBinary(t *testing.T) {
	out := build(t)
	head := gitHead(t)
	for _, name := range wantImages {
		t.Run(name, func(t *testing.T) {
			e := out.entry(t, name)
			l := Layout(filepath.Join(out.Dir, e.Layout))
			top, err := l.Index()
			require.NoError(t, err)
			require.Len(t, top.Manifests, 1, "index.json names one multi-arch image")
			d := top.Manifests[0]
			assert.Equal(t, MediaTypeIndex, d.MediaType)
			assert.Equal(t, e.Digest, d.Digest, "images.json records the index digest")
			assert.Equal(t, e.Ref, d.Annotations["io.containerd.image.name"], "ctr import names the image by this annotation")
			assert.Equal(t, e.Ref[strings.LastIndex(e.Ref, ":")+1:], d.Annotations["org.opencontainers.image.ref.name"])

			var idx Index
			require.NoError(t, l.JSON(d, &idx))
			assertLabels(t, idx.Annotations, name, out, head)
			var platforms []string
			for _, m := range idx.Manifests {
				require.NotNil(t, m.Platform)
				platforms = append(platforms, m.Platform.String())
				assert.Equal(t, e.Platforms[m.Platform.String()], m.Digest)
				assertPlatformImage(t, l, name, m, out, head)
			}
			assert.ElementsMatch(t, []string{"linux/amd64", "linux/arm64/v8"}, platforms)
		})
	}
}

func assertPlatformImage(t *testing.T, l Layout, name string, d Descriptor, out Output, head string) {
	t.Helper()
	var m Manifest
	require.NoError(t, l.JSON(d, &m))
	assert.Equal(t, MediaTypeManifest, m.MediaType)
	assert.Equal(t, MediaTypeConfig, m.Config.MediaType)
	require.Len(t, m.Layers, 1, "one layer")
	assert.Equal(t, MediaTypeLayer, m.Layers[0].MediaType)
	assertLabels(t, m.Annotations, name, out, head)

	var cfg Config
	require.NoError(t, l.JSON(m.Config, &cfg))
	assert.Equal(t, d.Platform.OS, cfg.OS)
	assert.Equal(t, d.Platform.Architecture, cfg.Architecture)
	assert.Equal(t, d.Platform.Variant, cfg.Variant)
	assert.Equal(t, "65532:65532", cfg.Config.User, "runs as the unprivileged user the charts set")
	assert.Equal(t, []string{"/" + name}, cfg.Config.Entrypoint)
	assert.Empty(t, cfg.Config.Cmd)
	assertLabels(t, cfg.Config.Labels, name, out, head)

	layer, err := l.Blob(m.Layers[0])
	require.NoError(t, err)
	files, diffID, err := Layer(layer)
	require.NoError(t, err)
	assert.Equal(t, []string{diffID}, cfg.RootFS.DiffIDs, "the config's diff ID is the uncompressed layer's digest")
	require.Len(t, files, 1, "the layer holds the binary and nothing else: no shell, no libraries, no /etc")
	f := files[0]
	assert.Equal(t, name, strings.TrimPrefix(f.Header.Name, "/"), "the binary is the entrypoint")
	assert.Equal(t, byte('0'), f.Header.Typeflag, "a regular file")
	assert.Equal(t, int64(0o555), f.Header.Mode, "executable by the unprivileged user, writable by nobody")
	assert.Zero(t, f.Header.Uid)
	assert.Zero(t, f.Header.Gid)
	assertStaticBinary(t, f.Data, name, cfg.Architecture, out.Version)
}

func assertLabels(t *testing.T, labels map[string]string, name string, out Output, head string) {
	t.Helper()
	for _, key := range []string{"title", "description", "source", "version", "revision", "created", "licenses"} {
		assert.NotEmpty(t, labels["org.opencontainers.image."+key], "label org.opencontainers.image.%s", key)
	}
	assert.Equal(t, name, labels["org.opencontainers.image.title"])
	assert.Equal(t, out.Version, labels["org.opencontainers.image.version"])
	assert.Equal(t, head, labels["org.opencontainers.image.revision"], "built from the checked-out commit")
	created, err := time.Parse(time.RFC3339, labels["org.opencontainers.image.created"])
	assert.NoError(t, err)
	assert.False(t, created.After(time.Now()), "created is the commit time")
	assert.True(t, strings.HasPrefix(labels["org.opencontainers.image.source"], "https://"))
}

// assertStaticBinary checks the ELF file and the build information the Go toolchain embeds.
func assertStaticBinary(t *testing.T, data []byte, name, arch, version string) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(data))
	require.NoError(t, err, "an ELF binary")
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	assert.Equal(t, want[arch], f.Machine)
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "static: no dynamic loader")
		assert.NotEqual(t, elf.PT_DYNAMIC, p.Type, "static: no shared libraries")
	}
	info, err := buildinfo.Read(bytes.NewReader(data))
	require.NoError(t, err)
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	assert.Equal(t, "0", settings["CGO_ENABLED"])
	assert.Equal(t, "true", settings["-trimpath"])
	assert.Equal(t, "linux", settings["GOOS"])
	assert.Equal(t, arch, settings["GOARCH"])
	// -trimpath keeps -ldflags out of the build information, so look for the stamped string.
	assert.True(t, bytes.Contains(data, []byte(version)), "the version %s is stamped in", version)
	if name == "pause" {
		return
	}
	assert.Equal(t, "github.com/sluicehq/sluice/"+name+"/cmd/"+name, info.Path)
	var deps []string
	for _, d := range info.Deps {
		deps = append(deps, d.Path)
	}
	assert.Contains(t, deps, "golang.org/x/crypto/x509roots/fallback", "CA roots are in the binary")
}

// The OCI archive (for ctr import and kind load image-archive) is the layout, file for file; each
// docker archive (for docker load) holds one platform's image, tagged with the image's name.
func TestArchivesHoldTheSameImages(t *testing.T) {
	out := build(t)
	for _, name := range wantImages {
		t.Run(name, func(t *testing.T) {
			e := out.entry(t, name)
			layoutFiles := readFolder(t, filepath.Join(out.Dir, e.Layout))
			raw, err := os.ReadFile(filepath.Join(out.Dir, e.OCIArchive))
			require.NoError(t, err)
			entries, err := TarFiles(raw)
			require.NoError(t, err)
			archived := map[string][]byte{}
			for _, f := range entries {
				archived[f.Header.Name] = f.Data
			}
			assert.Equal(t, layoutFiles, archived)

			require.Len(t, e.DockerArchives, 2)
			for platform, file := range e.DockerArchives {
				assertDockerArchive(t, filepath.Join(out.Dir, file), e.Ref, platform)
			}
		})
	}
}

func assertDockerArchive(t *testing.T, path, ref, platform string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	entries, err := TarFiles(raw)
	require.NoError(t, err)
	files := map[string][]byte{}
	for _, f := range entries {
		files[f.Header.Name] = f.Data
	}
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	require.NoError(t, jsonUnmarshal(files["manifest.json"], &manifest), "docker load reads manifest.json")
	require.Len(t, manifest, 1, "one image per docker archive")
	assert.Equal(t, []string{ref}, manifest[0].RepoTags)
	var cfg Config
	require.NoError(t, jsonUnmarshal(files[manifest[0].Config], &cfg))
	assert.Equal(t, platform, Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant}.String())
	require.Len(t, manifest[0].Layers, 1)
	_, diffID, err := Layer(files[manifest[0].Layers[0]])
	require.NoError(t, err)
	assert.Equal(t, cfg.RootFS.DiffIDs, []string{diffID})
}

func readFolder(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)], err = os.ReadFile(p)
		return err
	})
	require.NoError(t, err)
	return files
}

func jsonUnmarshal(data []byte, v any) error {
	if data == nil {
		return errors.New("missing file")
	}
	return json.Unmarshal(data, v)
}
