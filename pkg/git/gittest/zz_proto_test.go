package gittest

import (
	"context"
	"testing"
	"time"
	"os/exec"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/sluicehq/sluice/pkg/git/gitobj"
)

func TestProtoPush(t *testing.T) {
	srv := NewServer(t)
	r := srv.CreateRepo(t, "big")
	t0 := time.Now()
	tip := GenerateHistory(t, r.Dir, "dev", 20000)
	t.Logf("generate: %v", time.Since(t0))
	next := r.CommitFiles(t, "dev-next", nil, "x")
	_ = next
	r.SetBranch(t, "dev-next", tip)
	n2 := r.CommitFiles(t, "dev-next", map[string]string{"a": "b"}, "next")
	dev2 := r.CommitFiles(t, "dev", map[string]string{"c": "d"}, "dev side")

	dir := t.TempDir()
	repo, err := gogit.PlainInit(dir, true)
	if err != nil { t.Fatal(err) }
	rem, _ := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{srv.URL("big")}})
	t0 = time.Now()
	err = rem.FetchContext(context.Background(), &gogit.FetchOptions{RefSpecs: []config.RefSpec{"+refs/heads/dev:refs/remotes/origin/dev", "+refs/heads/dev-next:refs/remotes/origin/dev-next"}, Tags: gogit.NoTags})
	t.Logf("initial fetch: %v %v", time.Since(t0), err)

	sto := repo.Storer
	nc, _ := object.GetCommit(sto, plumbing.NewHash(n2))
	sig := Signature(time.Now())
	t0 = time.Now()
	m, err := gitobj.WriteCommit(sto, &object.Commit{Author: sig, Committer: sig, Message: "merge", TreeHash: nc.TreeHash, ParentHashes: []plumbing.Hash{plumbing.NewHash(dev2), nc.Hash}})
	if err != nil { t.Fatal(err) }
	t.Logf("merge commit: %v", time.Since(t0))
	t0 = time.Now()
	err = rem.PushContext(context.Background(), &gogit.PushOptions{RefSpecs: []config.RefSpec{config.RefSpec(m.String() + ":refs/heads/dev")}, RequireRemoteRefs: []config.RefSpec{config.RefSpec(dev2 + ":refs/heads/dev")}})
	t.Logf("stock push: %v %v", time.Since(t0), err)
	t0 = time.Now()
	a, _ := object.GetCommit(sto, plumbing.NewHash(dev2))
	ok, err := a.IsAncestor(nc)
	t.Logf("isAncestor (false case): %v %v %v", time.Since(t0), ok, err)
	if _, err := exec.LookPath("git"); err == nil {
		out, err := exec.Command("git", "-C", r.Dir, "fsck", "--connectivity-only").CombinedOutput()
		t.Logf("fsck: %s %v", out, err)
	}
}
