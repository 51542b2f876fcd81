package soak

import (
	"encoding/json"
	"fmt"
	"io"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
)

// branchReader reads a bare repository of the git server from disk, as git itself would
// show it: the soak checks what git holds, not what the controllers say.
type branchReader struct {
	dir  string
	dry  map[plumbing.Hash]string
	repo *gogit.Repository
}

func newBranchReader(dir string) *branchReader {
	return &branchReader{dir: dir, dry: map[plumbing.Hash]string{}}
}

// tip is the branch's commit, "" when it does not exist.
func (b *branchReader) tip(branch string) (string, error) {
	repo, err := gogit.PlainOpen(b.dir)
	if err != nil {
		return "", err
	}
	b.repo = repo
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err == plumbing.ErrReferenceNotFound {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return ref.Hash().String(), nil
}

// isAncestor reports whether old is in new's history.
func (b *branchReader) isAncestor(old, new string) (bool, error) {
	if old == new {
		return true, nil
	}
	o, err := b.repo.CommitObject(plumbing.NewHash(old))
	if err != nil {
		return false, err
	}
	n, err := b.repo.CommitObject(plumbing.NewHash(new))
	if err != nil {
		return false, err
	}
	return o.IsAncestor(n)
}

// steps walks the first-parent history of tip back to stop (exclusive; "" for the root) and
// returns its steps oldest first.
func (b *branchReader) steps(tip, stop string) ([]Step, error) {
	var out []Step
	h := plumbing.NewHash(tip)
	for h.String() != stop {
		c, err := b.repo.CommitObject(h)
		if err != nil {
			return nil, err
		}
		if len(c.ParentHashes) == 0 {
			break
		}
		step, err := b.step(c)
		if err != nil {
			return nil, err
		}
		out = append(out, step)
		h = c.ParentHashes[0]
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

func (b *branchReader) step(c *object.Commit) (Step, error) {
	parent, err := b.repo.CommitObject(c.ParentHashes[0])
	if err != nil {
		return Step{}, err
	}
	// A merge commit brings in its second parent; a fast-forward, the commit itself.
	brought := c
	if len(c.ParentHashes) > 1 {
		if brought, err = b.repo.CommitObject(c.ParentHashes[1]); err != nil {
			return Step{}, err
		}
	}
	s := Step{SHA: c.Hash.String(), Parent: parent.Hash.String(),
		Revert:      git.Trailer(brought.Message, rollbackv1.TrailerRevertCommit),
		RevertedDry: git.Trailer(brought.Message, rollbackv1.TrailerRevertedDrySHA)}
	if s.Dry, err = b.dryOf(c); err != nil {
		return Step{}, err
	}
	if s.ParentDry, err = b.dryOf(parent); err != nil {
		return Step{}, err
	}
	return s, nil
}

// dryOf reads the dry SHA the hydrator's metadata names in c's tree.
func (b *branchReader) dryOf(c *object.Commit) (string, error) {
	if d, ok := b.dry[c.Hash]; ok {
		return d, nil
	}
	f, err := c.File(git.DefaultMetadataFile)
	if err != nil {
		return "", fmt.Errorf("%s of %s: %w", git.DefaultMetadataFile, short(c.Hash.String()), err)
	}
	r, err := f.Reader()
	if err != nil {
		return "", err
	}
	defer r.Close()
	raw, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	var m struct {
		DrySHA string `json:"drySha"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", fmt.Errorf("%s of %s: %w", git.DefaultMetadataFile, short(c.Hash.String()), err)
	}
	b.dry[c.Hash] = m.DrySHA
	return m.DrySHA, nil
}
