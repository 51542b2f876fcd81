package git

import (
	"errors"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

func hasObject(s storer.EncodedObjectStorer, h plumbing.Hash) bool {
	return s.HasEncodedObject(h) == nil
}

func removeRef(s storer.ReferenceStorer, name plumbing.ReferenceName) error {
	if err := s.RemoveReference(name); err != nil && !errors.Is(err, plumbing.ErrReferenceNotFound) {
		return err
	}
	return nil
}

// refValue returns the commit name points at, or plumbing.ZeroHash when it does not exist.
func refValue(s storer.ReferenceStorer, name plumbing.ReferenceName) (plumbing.Hash, error) {
	ref, err := s.Reference(name)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return ref.Hash(), nil
}

func containsHash(hs []plumbing.Hash, h plumbing.Hash) bool {
	for _, x := range hs {
		if x == h {
			return true
		}
	}
	return false
}

func sortedStrings(s []string) []string {
	sort.Strings(s)
	return s
}
