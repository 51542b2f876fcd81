package integration

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// heapProfileDir is SLUICE_BENCH_HEAP_PROFILES: a folder where BenchmarkFleet keeps each
// promoter's heap profile at rest and after the wave, read with `go tool pprof -top
// -sample_index=inuse_space FILE`. Unset, the promoters run without a profiler.
func heapProfileDir() string { return os.Getenv("SLUICE_BENCH_HEAP_PROFILES") }

// saveHeapProfiles writes each shard's heap profile, after a collection (gc=1) so that it shows
// live data only, to <dir>/<namespace>-<phase>-shard<i>.pb.gz.
func (f *fleet) saveHeapProfiles(b *testing.B, phase string) {
	dir := heapProfileDir()
	if dir == "" {
		return
	}
	must(b, os.MkdirAll(dir, 0o755))
	for i, s := range f.shards {
		path := filepath.Join(dir, fmt.Sprintf("%s-%s-shard%d.pb.gz", f.ns, phase, i))
		must(b, saveHeapProfile("http://"+s.profiler+"/debug/pprof/heap?gc=1", path))
		b.Logf("heap profile of shard %d %s: %s", i, phase, path)
	}
}

func saveHeapProfile(url, path string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
