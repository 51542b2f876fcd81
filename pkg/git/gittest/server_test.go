package gittest_test

import (
	"fmt"
	"sync"
	"testing"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/git/gittest"
)

// A ref advertisement served while a push rewrites the ref must show the old or the new value,
// never a broken stream: CI once saw "ref file is empty" fail a push this way.
func TestRefAdvertisementsDuringRefUpdatesAreWhole(t *testing.T) {
	srv := gittest.NewServer(t)
	repo := srv.CreateRepo(t, "app")
	repo.CommitFiles(t, "main", map[string]string{"n": "0"}, "first")

	remote := gogit.NewRemote(nil, &config.RemoteConfig{Name: "origin", URLs: []string{repo.URL()}})
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []error
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, err := remote.List(&gogit.ListOptions{}); err != nil {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := 1; i <= 300; i++ {
		repo.CommitFiles(t, "main", map[string]string{"n": fmt.Sprint(i)}, fmt.Sprint("commit ", i))
	}
	close(done)
	wg.Wait()
	require.Empty(t, failures, "every listing during the updates")
}
