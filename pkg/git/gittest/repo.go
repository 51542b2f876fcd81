package gittest

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/revlist"

	"github.com/sluicehq/sluice/pkg/git/gitobj"
)

// Repo is a served repository, written directly on the server side as another client (a
// hydrator, a person) would have pushed it. Writes take the same lock as pushes.
type Repo struct {
	Name string
	Dir  string
	srv  *Server
	mu   sync.Mutex
}

// OpenBare returns a handle on the bare repository at dir, served by something else (or not at
// all). Its writes lock only against each other.
func OpenBare(dir string) *Repo {
	return &Repo{Name: strings.TrimSuffix(filepath.Base(dir), ".git"), Dir: dir}
}

// URL is the HTTP clone URL of the repository on its Server ("" for OpenBare).
func (r *Repo) URL() string {
	if r.srv == nil {
		return ""
	}
	return r.srv.URL(r.Name)
}

func (r *Repo) lock() func() {
	if r.srv != nil {
		return r.srv.lock(r.Name)
	}
	r.mu.Lock()
	return r.mu.Unlock
}

// Signature is the author and committer of commits written by tests.
func Signature(when time.Time) object.Signature {
	return object.Signature{Name: "Gittest", Email: "gittest@example.invalid", When: when}
}

// CommitFiles writes files on top of branch (creating the branch from nothing if it is missing)
// and moves the branch to the new commit, whose hash it returns.
func (r *Repo) CommitFiles(tb testing.TB, branch string, files map[string]string, message string) string {
	tb.Helper()
	write := make(map[string][]byte, len(files))
	for p, content := range files {
		write[p] = []byte(content)
	}
	return r.Commit(tb, branch, gitobj.Changes{Write: write}, message)
}

// DeleteFiles commits the removal of paths on branch and returns the new commit.
func (r *Repo) DeleteFiles(tb testing.TB, branch string, paths ...string) string {
	tb.Helper()
	return r.Commit(tb, branch, gitobj.Changes{Delete: paths}, "delete "+strings.Join(paths, ", ")+"\n")
}

// Commit applies changes on top of branch (creating it from nothing if it is missing) and moves
// the branch to the new commit, whose hash it returns.
func (r *Repo) Commit(tb testing.TB, branch string, changes gitobj.Changes, message string) string {
	tb.Helper()
	defer r.lock()()
	sto := open(r.Dir)
	parent, err := currentValue(sto, plumbing.NewBranchReferenceName(branch))
	if err != nil {
		tb.Fatal(err)
	}
	var parents []plumbing.Hash
	var base plumbing.Hash
	if !parent.IsZero() {
		c, err := object.GetCommit(sto, parent)
		if err != nil {
			tb.Fatal(err)
		}
		parents, base = []plumbing.Hash{parent}, c.TreeHash
	}
	tree, err := gitobj.WriteTree(sto, base, changes)
	if err != nil {
		tb.Fatal(err)
	}
	sig := Signature(nextTime())
	h, err := gitobj.WriteCommit(sto, &object.Commit{
		Author: sig, Committer: sig, Message: message, TreeHash: tree, ParentHashes: parents,
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := sto.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(branch), h)); err != nil {
		tb.Fatal(err)
	}
	return h.String()
}

// SetBranch points branch at sha, creating or rewriting it as a force push would.
func (r *Repo) SetBranch(tb testing.TB, branch, sha string) {
	tb.Helper()
	r.SetRef(tb, plumbing.NewBranchReferenceName(branch).String(), sha)
}

// SetRef points the full ref name at sha.
func (r *Repo) SetRef(tb testing.TB, ref, sha string) {
	tb.Helper()
	defer r.lock()()
	if err := open(r.Dir).SetReference(plumbing.NewHashReference(plumbing.ReferenceName(ref), plumbing.NewHash(sha))); err != nil {
		tb.Fatal(err)
	}
}

// Ref returns the value of the full ref name, or "" when it does not exist.
func (r *Repo) Ref(tb testing.TB, ref string) string {
	tb.Helper()
	defer r.lock()()
	h, err := currentValue(open(r.Dir), plumbing.ReferenceName(ref))
	if err != nil {
		tb.Fatal(err)
	}
	if h.IsZero() {
		return ""
	}
	return h.String()
}

// Branch returns the commit branch points at, or "" when it does not exist.
func (r *Repo) Branch(tb testing.TB, branch string) string {
	tb.Helper()
	return r.Ref(tb, plumbing.NewBranchReferenceName(branch).String())
}

// AddNote attaches content to the commit target under notesRef, as `git notes add -f` would.
func (r *Repo) AddNote(tb testing.TB, notesRef, target, content string) {
	tb.Helper()
	defer r.lock()()
	sto := open(r.Dir)
	name := plumbing.ReferenceName(notesRef)
	parent, err := currentValue(sto, name)
	if err != nil {
		tb.Fatal(err)
	}
	h, err := gitobj.WriteNote(sto, parent, plumbing.NewHash(target), []byte(content), Signature(nextTime()), "")
	if err != nil {
		tb.Fatal(err)
	}
	if err := sto.SetReference(plumbing.NewHashReference(name, h)); err != nil {
		tb.Fatal(err)
	}
}

// ReadCommit reads a commit of the served repository.
func (r *Repo) ReadCommit(tb testing.TB, sha string) *object.Commit {
	tb.Helper()
	c, err := object.GetCommit(open(r.Dir), plumbing.NewHash(sha))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// IsAncestor reports whether ancestor is reachable from descendant in the served repository.
func (r *Repo) IsAncestor(tb testing.TB, ancestor, descendant string) bool {
	tb.Helper()
	sto := open(r.Dir)
	a, err := object.GetCommit(sto, plumbing.NewHash(ancestor))
	if err != nil {
		tb.Fatal(err)
	}
	d, err := object.GetCommit(sto, plumbing.NewHash(descendant))
	if err != nil {
		tb.Fatal(err)
	}
	ok, err := a.IsAncestor(d)
	if err != nil {
		tb.Fatal(err)
	}
	return ok
}

// CheckConnectivity fails the test if any object reachable from the repository's refs is
// missing, as git fsck --connectivity-only would: a push that sent an incomplete pack shows here.
func (r *Repo) CheckConnectivity(tb testing.TB) {
	tb.Helper()
	sto := open(r.Dir)
	refs, err := sto.IterReferences()
	if err != nil {
		tb.Fatal(err)
	}
	var tips []plumbing.Hash
	_ = refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference {
			tips = append(tips, ref.Hash())
		}
		return nil
	})
	if _, err := revlist.Objects(sto, tips, nil); err != nil {
		tb.Fatalf("repository %s is missing objects: %v", r.Name, err)
	}
}

// DeleteBranch removes branch, as a deleting push would.
func (r *Repo) DeleteBranch(tb testing.TB, branch string) {
	tb.Helper()
	defer r.lock()()
	if err := open(r.Dir).RemoveReference(plumbing.NewBranchReferenceName(branch)); err != nil {
		tb.Fatal(err)
	}
}

// MergeCommit writes a commit with the given tree and parents on branch, as a merge done
// elsewhere would, and returns it.
func (r *Repo) MergeCommit(tb testing.TB, branch, tree string, parents ...string) string {
	tb.Helper()
	defer r.lock()()
	sto := open(r.Dir)
	hashes := make([]plumbing.Hash, len(parents))
	for i, p := range parents {
		hashes[i] = plumbing.NewHash(p)
	}
	sig := Signature(nextTime())
	h, err := gitobj.WriteCommit(sto, &object.Commit{
		Author: sig, Committer: sig, Message: "Merge\n", TreeHash: plumbing.NewHash(tree), ParentHashes: hashes,
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := sto.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(branch), h)); err != nil {
		tb.Fatal(err)
	}
	return h.String()
}
