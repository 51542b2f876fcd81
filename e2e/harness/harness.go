// Package harness ties the node to this checkout: the binaries hack/testbin.sh --node builds,
// the images `make images` writes to bin/images, the Gitea hack/tools/gitea/build.sh builds,
// and the helper binaries test pods run.
package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/e2e/node"
	"github.com/sluicehq/sluice/testenv"
)

// Images are the images of bin/images/images.json.
type Images struct {
	// Version is the tag of every image, as `make images` stamped it.
	Version string
	// Refs maps each image's name (gate-controller, pause) to its reference.
	Refs map[string]string
	// Archives are the OCI archives to import, one per image.
	Archives []string
}

// ReadImages reads the images `make images` built into <root>/bin/images, or into the folder
// $SLUICE_IMAGES names, and those only make e2e runs (Flux's controllers and the suite's HTTP
// app), which hack/e2e.sh builds into <root>/bin/e2e-images, or $SLUICE_E2E_IMAGES; that second
// folder may be missing, and the tests that need its images then say so.
func ReadImages(root string) (Images, error) {
	imgs := Images{Refs: map[string]string{}}
	version, err := readImageDir(&imgs, envOr("SLUICE_IMAGES", filepath.Join(root, "bin", "images")), "run make images")
	if err != nil {
		return Images{}, err
	}
	imgs.Version = version
	e2e := envOr("SLUICE_E2E_IMAGES", filepath.Join(root, "bin", "e2e-images"))
	if _, err := os.Stat(filepath.Join(e2e, "images.json")); err == nil {
		if _, err := readImageDir(&imgs, e2e, "run hack/e2e.sh"); err != nil {
			return Images{}, err
		}
	}
	if imgs.Refs["pause"] == "" {
		return Images{}, fmt.Errorf("the images have no pause image: run make images")
	}
	return imgs, nil
}

// E2EImagesHint says how to build the images of bin/e2e-images, for a test that misses one.
const E2EImagesHint = "hack/e2e.sh builds it into bin/e2e-images (hack/tools/images --set e2e)"

// readImageDir adds the images of dir's images.json to imgs and returns their version.
func readImageDir(imgs *Images, dir, hint string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "images.json"))
	if err != nil {
		return "", fmt.Errorf("read the images: %w (%s)", err, hint)
	}
	var m struct {
		Version string `json:"version"`
		Images  []struct {
			Name       string `json:"name"`
			Ref        string `json:"ref"`
			OCIArchive string `json:"ociArchive"`
		} `json:"images"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("read %s: %w", filepath.Join(dir, "images.json"), err)
	}
	for _, e := range m.Images {
		imgs.Refs[e.Name] = e.Ref
		imgs.Archives = append(imgs.Archives, filepath.Join(dir, e.OCIArchive))
	}
	return m.Version, nil
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// NodeConfig is the node for this checkout, with its component logs in <root>/.cache/e2e/logs.
func NodeConfig(root string) (node.Config, Images, error) {
	imgs, err := ReadImages(root)
	if err != nil {
		return node.Config{}, Images{}, err
	}
	bin, err := script(root, "hack/testbin.sh", "--node")
	if err != nil {
		return node.Config{}, Images{}, err
	}
	return node.Config{
		Paths:        node.DefaultPaths,
		BinDir:       bin,
		LogDir:       filepath.Join(root, ".cache", "e2e", "logs"),
		Images:       imgs.Archives,
		SandboxImage: imgs.Refs["pause"],
	}, imgs, nil
}

// GiteaDir is the folder holding the gitea binary and its static assets, built once.
func GiteaDir(root string) (string, error) { return script(root, "hack/tools/gitea/build.sh") }

// script runs a build script of the repository that prints a folder, and returns the folder.
func script(root, path string, args ...string) (string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("bash", append([]string{filepath.Join(root, path)}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w\n%s", path, err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// BuildHostBinaries builds the helper commands test pods run (e2e/cmd/...) as static binaries
// into the node's HostBin, which pods mount read-only.
func BuildHostBinaries(root string, paths node.Paths, names ...string) error {
	for _, name := range names {
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(paths.HostBin(), name), "./cmd/"+name)
		cmd.Dir = filepath.Join(root, "e2e")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %w\n%s", name, err, out)
		}
	}
	return nil
}

// Root is the repository's root folder.
func Root() (string, error) { return testenv.RepoRoot() }
