package main

import (
	"bufio"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// testConfig builds only the small pause image into a temporary folder.
func testConfig(t *testing.T) Config {
	t.Helper()
	var cfg Config
	if err := cfg.complete("", "", "linux/amd64,linux/arm64", "pause"); err != nil {
		t.Fatal(err)
	}
	cfg.Out = t.TempDir()
	cfg.Progress = t.Logf
	return cfg
}

// The files load with the code crane push and crane's tarball loading use, and go-containerregistry
// finds every digest, size and diff ID consistent.
func TestImagesLoadAndValidate(t *testing.T) {
	cfg := testConfig(t)
	m, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := m.find("pause")
	if !ok {
		t.Fatal("images.json lists no pause image")
	}
	idx, err := layout.ImageIndexFromPath(filepath.Join(cfg.Out, e.Layout))
	if err != nil {
		t.Fatal(err)
	}
	top, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Manifests) != 1 || !top.Manifests[0].MediaType.IsIndex() {
		t.Fatalf("crane push needs one index in index.json, got %+v", top.Manifests)
	}
	multi, err := idx.ImageIndex(top.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(multi); err != nil {
		t.Fatalf("the multi-arch index is invalid: %v", err)
	}
	assertPushes(t, multi, e.Digest)
	ref, err := name.NewTag(e.Ref)
	if err != nil {
		t.Fatal(err)
	}
	for platform, file := range e.DockerArchives {
		img, err := tarball.ImageFromPath(filepath.Join(cfg.Out, file), &ref)
		if err != nil {
			t.Fatalf("%s: %v", platform, err)
		}
		if err := validate.Image(img); err != nil {
			t.Fatalf("the %s docker archive is invalid: %v", platform, err)
		}
		// A docker archive keeps no manifest, so compare configs: the image ID docker shows.
		want, err := imageConfigName(multi, e.Platforms[platform])
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := img.ConfigName(); got != want {
			t.Errorf("the %s docker archive holds config %s, the index %s", platform, got, want)
		}
	}
}

// A second run with nothing changed keeps the files; a build from scratch gives the same digest.
func TestImagesAreCachedAndReproducible(t *testing.T) {
	cfg := testConfig(t)
	first, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(cfg.Out, "pause.oci.tar")
	before, err := os.Stat(archive)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	cfg.Progress = func(format string, args ...any) { kept = append(kept, format) }
	second, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(archive)
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().Equal(before.ModTime()) || len(kept) != 1 || !strings.Contains(kept[0], "unchanged") {
		t.Errorf("the second run rebuilt pause: %q", kept)
	}
	if first.Images[0].Digest != second.Images[0].Digest {
		t.Errorf("digest changed from %s to %s", first.Images[0].Digest, second.Images[0].Digest)
	}

	cfg.Out = t.TempDir()
	cfg.Progress = t.Logf
	fresh, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Images[0].Digest != first.Images[0].Digest {
		t.Errorf("a build from scratch gave %s, the first %s: the build is not reproducible", fresh.Images[0].Digest, first.Images[0].Digest)
	}
}

// pause prints its version, and exits 0 on SIGTERM, as a kubelet stopping a pod expects.
func TestPauseExitsOnSIGTERM(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pause")
	build := exec.Command("go", "build", "-ldflags=-X main.version=1.2.3", "-o", bin, "./pause")
	build.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err := exec.Command(bin, "-v").Output()
	if err != nil || !strings.HasPrefix(string(out), "pause 1.2.3") {
		t.Fatalf("pause -v: %q, %v", out, err)
	}
	cmd := exec.Command(bin)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// SIGTERM before pause's signal.Notify would kill it with the default action, which the
	// exit status below would show: wait for the line it writes once Notify is in place.
	lines := bufio.NewReader(stderr)
	ready, err := lines.ReadString('\n')
	if err != nil || !strings.Contains(ready, "waiting for SIGTERM") {
		t.Fatalf("pause did not say it was ready: %q, %v", ready, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	bye, _ := lines.ReadString('\n')
	if err := cmd.Wait(); err != nil {
		t.Fatalf("pause did not exit 0 on SIGTERM: %v (%s)", err, bye)
	}
	if !strings.Contains(bye, "shutting down on terminated") {
		t.Errorf("pause's last words: %q", bye)
	}
}

func imageConfigName(idx v1.ImageIndex, digest string) (v1.Hash, error) {
	h, err := v1.NewHash(digest)
	if err != nil {
		return v1.Hash{}, err
	}
	img, err := idx.Image(h)
	if err != nil {
		return v1.Hash{}, err
	}
	return img.ConfigName()
}

// assertPushes pushes idx to an in-memory registry as crane push does, and pulls it back.
func assertPushes(t *testing.T, idx v1.ImageIndex, digest string) {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref, err := name.ParseReference(strings.TrimPrefix(srv.URL, "http://") + "/sluicehq/pause:test")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatalf("push: %v", err)
	}
	pulled, err := remote.Index(ref)
	if err != nil {
		t.Fatalf("pull: %v", err)
	}
	if got, _ := pulled.Digest(); got.String() != digest {
		t.Errorf("the registry serves %s, images.json says %s", got, digest)
	}
	if err := validate.Index(pulled); err != nil {
		t.Errorf("the pulled index is invalid: %v", err)
	}
}

// The e2e set puts a prebuilt static binary (here pause, standing for Flux's controllers) into an
// image as it is, labelled with the upstream version; a binary for another architecture is
// refused with the flag to use, and a missing folder names the script that fills it.
func TestE2ESetWrapsAPrebuiltBinary(t *testing.T) {
	fluxBin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(fluxBin, "source-controller"), "./pause")
	build.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var cfg Config
	cfg.Set, cfg.FluxBin = SetE2E, fluxBin
	if err := cfg.complete("", "", "linux/amd64", "source-controller"); err != nil {
		t.Fatal(err)
	}
	cfg.Out = t.TempDir()
	cfg.Progress = t.Logf
	m, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := m.find("source-controller")
	if !ok {
		t.Fatal("images.json lists no source-controller image")
	}
	idx, err := layout.ImageIndexFromPath(filepath.Join(cfg.Out, e.Layout))
	if err != nil {
		t.Fatal(err)
	}
	top, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	multi, err := idx.ImageIndex(top.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	h, err := v1.NewHash(e.Platforms["linux/amd64"])
	if err != nil {
		t.Fatal(err)
	}
	img, err := multi.Image(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(img); err != nil {
		t.Fatalf("the image is invalid: %v", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Config.Entrypoint; len(got) != 1 || got[0] != "/source-controller" {
		t.Errorf("entrypoint %q", got)
	}
	if got := cf.Config.Labels["org.opencontainers.image.version"]; got != fluxVersion {
		t.Errorf("version label %q, want Flux's %s", got, fluxVersion)
	}
	if got := cf.Config.Labels["org.opencontainers.image.source"]; got != "https://github.com/fluxcd/source-controller" {
		t.Errorf("source label %q", got)
	}
	// Tagged and stamped with Flux's release, not Sluice's commit: the image does not change with it.
	if !strings.HasSuffix(e.Ref, "/source-controller:"+fluxVersion) || cf.Config.Labels["org.opencontainers.image.revision"] != "" {
		t.Errorf("ref %s, revision label %q", e.Ref, cf.Config.Labels["org.opencontainers.image.revision"])
	}

	cfg.Platforms = []Platform{{OS: "linux", Arch: "arm64", Variant: "v8"}}
	cfg.Out = t.TempDir()
	if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "--platforms linux/amd64") {
		t.Errorf("an amd64 binary in an arm64 image: %v", err)
	}
	var missing Config
	missing.Set = SetE2E
	if err := missing.complete("", "", "linux/amd64", ""); err == nil || !strings.Contains(err.Error(), "hack/tools/flux/build.sh") {
		t.Errorf("the e2e set without --flux-bin: %v", err)
	}
}
