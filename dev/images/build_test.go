package images

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{}, &env)
}

// wantImages are every image `make images` must write.
var wantImages = []string{"commitstatus-controller", "gate-controller", "health-controller", "pause", "promoter-controller", "rollback-controller"}

// Output is images.json as the tests read it.
type Output struct {
	Dir      string
	Version  string  `json:"version"`
	Revision string  `json:"revision"`
	Created  string  `json:"created"`
	Images   []Entry `json:"images"`
}

// Entry is one image of images.json.
type Entry struct {
	Name           string            `json:"name"`
	Ref            string            `json:"ref"`
	Digest         string            `json:"digest"`
	Platforms      map[string]string `json:"platforms"`
	Layout         string            `json:"layout"`
	OCIArchive     string            `json:"ociArchive"`
	DockerArchives map[string]string `json:"dockerArchives"`
	LayerBytes     map[string]int64  `json:"layerBytes"`
}

func (o Output) entry(t *testing.T, name string) Entry {
	t.Helper()
	for _, e := range o.Images {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("images.json lists no image %q", name)
	return Entry{}
}

var (
	buildOnce sync.Once
	built     Output
	buildErr  error
)

// build runs the image builder as `make images` does, once per test binary. The builder keeps
// images whose content did not change, so a second run costs only its cache check.
func build(t *testing.T) Output {
	t.Helper()
	testenv.SkipIfShort(t)
	buildOnce.Do(func() {
		root, err := testenv.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		built.Dir = filepath.Join(root, "bin", "images")
		cmd := exec.Command("go", "run", ".", "--out", built.Dir)
		cmd.Dir = filepath.Join(root, "hack", "tools", "images")
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = err
			t.Logf("image builder output:\n%s", out)
			return
		}
		data, err := os.ReadFile(filepath.Join(built.Dir, "images.json"))
		if err != nil {
			buildErr = err
			return
		}
		buildErr = json.Unmarshal(data, &built)
	})
	require.NoError(t, buildErr, "make images")
	return built
}

func gitHead(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	cmd := exec.Command("git", "rev-parse", "HEAD")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}
