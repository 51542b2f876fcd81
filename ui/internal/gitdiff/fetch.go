package gitdiff

import (
	"context"
	"errors"
	"fmt"
	"sync"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Source is where and how to read a repository.
type Source struct {
	URL  string
	Auth transport.AuthMethod
	// CABundle holds PEM certificates trusted for HTTPS, besides the system ones.
	CABundle []byte
}

// Repo is a repository read into memory: only the branches asked for, without tags.
type Repo struct {
	repo *gogit.Repository
}

// Fetch reads branches of src into memory, within lim.FetchBytes. A branch the remote does not
// have is left out: its commits are then not found by Diff.
func Fetch(ctx context.Context, src Source, branches []string, lim Limits) (*Repo, error) {
	lim = lim.WithDefaults()
	sto := &boundedStorage{Storage: memory.NewStorage(), limit: lim.FetchBytes}
	repo, err := gogit.Init(sto, nil)
	if err != nil {
		return nil, err
	}
	remote, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{src.URL}})
	if err != nil {
		return nil, err
	}
	refs, err := remote.ListContext(ctx, &gogit.ListOptions{Auth: src.Auth, CABundle: src.CABundle})
	if err != nil {
		return nil, fmt.Errorf("list the branches of %s: %w", src.URL, err)
	}
	specs := refSpecs(refs, branches)
	if len(specs) == 0 {
		return &Repo{repo: repo}, nil
	}
	err = remote.FetchContext(ctx, &gogit.FetchOptions{RefSpecs: specs, Auth: src.Auth, CABundle: src.CABundle, Tags: gogit.NoTags})
	if sto.exceeded() {
		return nil, &TooLargeError{Limit: lim.FetchBytes}
	}
	if err != nil && !errors.Is(err, gogit.NoErrAlreadyUpToDate) {
		return nil, fmt.Errorf("fetch %s: %w", src.URL, err)
	}
	return &Repo{repo: repo}, nil
}

// refSpecs asks for the branches the remote advertises, each into its own remote-tracking ref.
func refSpecs(advertised []*plumbing.Reference, branches []string) []config.RefSpec {
	has := map[plumbing.ReferenceName]bool{}
	for _, r := range advertised {
		has[r.Name()] = true
	}
	var specs []config.RefSpec
	for _, b := range branches {
		name := plumbing.NewBranchReferenceName(b)
		if b == "" || !has[name] {
			continue
		}
		specs = append(specs, config.RefSpec("+"+name.String()+":"+plumbing.NewRemoteReferenceName("origin", b).String()))
	}
	return specs
}

// boundedStorage refuses objects past limit bytes, which ends the fetch: a repository larger
// than the bound costs the UI at most that much memory.
type boundedStorage struct {
	*memory.Storage
	limit int64

	mu   sync.Mutex
	used int64
	over bool
}

func (s *boundedStorage) SetEncodedObject(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	s.mu.Lock()
	s.used += obj.Size()
	if s.used > s.limit {
		s.over = true
	}
	over := s.over
	s.mu.Unlock()
	if over {
		return plumbing.ZeroHash, &TooLargeError{Limit: s.limit}
	}
	return s.Storage.SetEncodedObject(obj)
}

func (s *boundedStorage) exceeded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.over
}
