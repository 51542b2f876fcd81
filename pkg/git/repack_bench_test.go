package git_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	gogit "github.com/go-git/go-git/v5"

	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/git/gittest"
)

const (
	// packedHistory is the length of the first fetch, then packedRounds-1 fetches bring
	// commitsPerRound commits each: packedRounds packs in all.
	packedHistory   = 5000
	packedRounds    = 200
	commitsPerRound = 10
	// commitsRead is how many commits each read of BenchmarkReadAcrossPacks walks.
	commitsRead = 1000
)

var quiet = slog.New(slog.DiscardHandler)

// manyPacks is a cache fetched packedRounds times (maintenance off), built once per run.
var manyPacks struct {
	once sync.Once
	root string
	url  string
}

func manyPacksCache(b *testing.B) (root, url string) {
	manyPacks.once.Do(func() {
		dir := filepath.Join(benchDir(b, "many-packs-remote"), "app.git")
		if _, err := gogit.PlainInit(dir, true); err != nil {
			b.Fatal(err)
		}
		url, stop, err := gittest.ServeWithGit(dir)
		if errors.Is(err, gittest.ErrNoGit) {
			srv := gittest.StartServer(filepath.Dir(dir))
			stop, url = srv.Close, srv.URL("app")
		} else if err != nil {
			b.Fatal(err)
		}
		benchRoot.stops = append(benchRoot.stops, stop)

		root := benchDir(b, "many-packs-cache")
		c, err := git.NewCache(root, quiet, git.WithMaintenance(git.Maintenance{Disabled: true}))
		if err != nil {
			b.Fatal(err)
		}
		repo, err := c.Open(url, git.Auth{}, git.Options{})
		if err != nil {
			b.Fatal(err)
		}
		for round := range packedRounds {
			n := commitsPerRound
			if round == 0 {
				n = packedHistory
			}
			gittest.GenerateHistory(b, dir, "dev", n)
			if err := repo.Fetch(context.Background(), "dev"); err != nil {
				b.Fatal(err)
			}
		}
		manyPacks.root, manyPacks.url = root, url
	})
	if manyPacks.root == "" {
		b.Fatal("the cache with many packs could not be built")
	}
	return manyPacks.root, manyPacks.url
}

// copyCache copies the cache with many packs to a new folder and opens it with m.
func copyCache(b *testing.B, name string, m git.Maintenance) *git.Repository {
	src, url := manyPacksCache(b)
	root := copyDir(b, src, name)
	c, err := git.NewCache(root, quiet, git.WithMaintenance(m))
	if err != nil {
		b.Fatal(err)
	}
	repo, err := c.Open(url, git.Auth{}, git.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return repo
}

// BenchmarkReadAcrossPacks resolves dev and reads its last 1,000 commits in a cache that 200
// fetches left as 200 packs (the baseline, as without maintenance), then in the same cache
// repacked into one (metric x-baseline: its time as a multiple of the baseline's).
func BenchmarkReadAcrossPacks(b *testing.B) {
	read := func(repo *git.Repository) error {
		if _, err := repo.Resolve("dev"); err != nil {
			return err
		}
		log, err := repo.Log("dev", commitsRead)
		if err == nil && len(log) != commitsRead {
			err = errors.New("short log")
		}
		return err
	}
	var baseline float64
	run := func(b *testing.B, repo *git.Repository, isBaseline bool) {
		if err := read(repo); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if err := read(repo); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		if isBaseline {
			baseline = perOp
		} else if baseline > 0 {
			b.ReportMetric(perOp/baseline, "x-baseline")
		}
	}
	b.Run("200-packs", func(b *testing.B) {
		run(b, copyCache(b, "read-200-packs", git.Maintenance{Disabled: true}), true)
	})
	b.Run("repacked", func(b *testing.B) {
		repo := copyCache(b, "read-repacked", git.Maintenance{MaxPacks: 1})
		if err := repo.Fetch(context.Background(), "dev"); err != nil {
			b.Fatal(err)
		}
		run(b, repo, false)
	})
}

// BenchmarkRepack measures the fetch that repacks the 200 packs, beside the same fetch (nothing
// new on the remote) in a cache already repacked (metric x-baseline).
func BenchmarkRepack(b *testing.B) {
	var baseline float64
	b.Run("fetch-nothing-new", func(b *testing.B) {
		repo := copyCache(b, "repack-baseline", git.Maintenance{MaxPacks: 1})
		ctx := context.Background()
		if err := repo.Fetch(ctx, "dev"); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if err := repo.Fetch(ctx, "dev"); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		baseline = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("fetch-and-repack-200-packs", func(b *testing.B) {
		b.ReportAllocs()
		var elapsed int64
		for range b.N {
			b.StopTimer()
			repo := copyCache(b, "repack", git.Maintenance{MaxPacks: 1})
			b.StartTimer()
			if err := repo.Fetch(context.Background(), "dev"); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		elapsed = b.Elapsed().Nanoseconds()
		root := benchDir(b, "repack")
		packs, err := filepath.Glob(filepath.Join(root, "*", "objects", "pack", "pack-*.pack"))
		if err != nil || len(packs) != 1 {
			b.Fatalf("expected one pack after the repack, found %d (%v)", len(packs), err)
		}
		if baseline > 0 {
			b.ReportMetric(float64(elapsed)/float64(b.N)/baseline, "x-baseline")
		}
	})
}
