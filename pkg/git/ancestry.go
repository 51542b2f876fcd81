package git

import (
	"container/heap"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/sluicehq/sluice/pkg/text"
)

// IsAncestor reports whether commit a is reachable from commit b (a commit is its own
// ancestor). Both must be in the cache.
func (r *Repository) IsAncestor(a, b string) (bool, error) {
	ha, err := parseSHA(a)
	if err != nil {
		return false, err
	}
	hb, err := parseSHA(b)
	if err != nil {
		return false, err
	}
	r.sh.mu.Lock()
	defer r.sh.mu.Unlock()
	return isAncestor(r.sh.sto, ha, hb)
}

// Order is where one commit stands relative to another on a branch.
type Order int

const (
	// OrderSame: both are the same commit.
	OrderSame Order = iota
	// OrderAfter: the first commit descends from the second.
	OrderAfter
	// OrderBefore: the second commit descends from the first.
	OrderBefore
	// OrderUnrelated: both are on the branch, but neither descends from the other (they came
	// in through different sides of a merge).
	OrderUnrelated
)

func (o Order) String() string {
	switch o {
	case OrderSame:
		return "same"
	case OrderAfter:
		return "after"
	case OrderBefore:
		return "before"
	}
	return "unrelated"
}

// CompareOnBranch tells whether commit x comes after commit y on branch (as last fetched). Both
// must be reachable from the branch; otherwise the error wraps ErrNotOnBranch, as when the
// branch was rewritten. This is the "no moving backwards" question on the dry branch.
func (r *Repository) CompareOnBranch(branch, x, y string) (Order, error) {
	ref, err := branchRef(branch)
	if err != nil {
		return 0, err
	}
	hx, err := parseSHA(x)
	if err != nil {
		return 0, err
	}
	hy, err := parseSHA(y)
	if err != nil {
		return 0, err
	}
	r.sh.mu.Lock()
	defer r.sh.mu.Unlock()
	sto := r.sh.sto
	tip, err := refValue(sto, trackingRef(ref))
	if err != nil {
		return 0, err
	}
	if tip.IsZero() {
		return 0, fmt.Errorf("branch %s: %w (fetch it first)", branch, ErrBranchNotFound)
	}
	for _, h := range []plumbing.Hash{hx, hy} {
		on, err := isAncestor(sto, h, tip)
		if err != nil {
			return 0, err
		}
		if !on {
			return 0, fmt.Errorf("commit %s, branch %s: %w", text.ShortSHA(h.String()), branch, ErrNotOnBranch)
		}
	}
	if hx == hy {
		return OrderSame, nil
	}
	if after, err := isAncestor(sto, hy, hx); err != nil || after {
		return OrderAfter, err
	}
	if before, err := isAncestor(sto, hx, hy); err != nil || before {
		return OrderBefore, err
	}
	return OrderUnrelated, nil
}

// IsAfter reports whether x strictly comes after y on branch; see CompareOnBranch.
func (r *Repository) IsAfter(branch, x, y string) (bool, error) {
	o, err := r.CompareOnBranch(branch, x, y)
	return o == OrderAfter, err
}

// isAncestor walks down from both commits at once, newest first, painting each commit with the
// side(s) it is reachable from, as git's merge-base does. a is an ancestor of b once the b side
// reaches it. The walk ends when every commit left to visit is reachable from both sides: below
// that line nothing can change the answer. So the cost is the distance from the commits to where
// their histories meet, not the length of the history, which go-git's Commit.IsAncestor walks in
// full whenever the answer is no.
func isAncestor(s storer.EncodedObjectStorer, a, b plumbing.Hash) (bool, error) {
	if a == b {
		return hasCommit(s, a)
	}
	const (
		fromA uint8 = 1 << iota
		fromB
		both = fromA | fromB
	)
	paint := map[plumbing.Hash]uint8{}
	q := &commitQueue{}
	push := func(h plumbing.Hash, p uint8) error {
		if paint[h]&p == p {
			return nil
		}
		paint[h] |= p
		c, err := object.GetCommit(s, h)
		if err != nil {
			return fmt.Errorf("read commit %s: %w", h, err)
		}
		heap.Push(q, queued{hash: h, commit: c})
		return nil
	}
	if err := push(a, fromA); err != nil {
		return false, err
	}
	if err := push(b, fromB); err != nil {
		return false, err
	}
	for q.Len() > 0 && q.anyNot(paint, both) {
		e := heap.Pop(q).(queued)
		p := paint[e.hash]
		if e.hash == a && p&fromB != 0 {
			return true, nil
		}
		for _, parent := range e.commit.ParentHashes {
			if err := push(parent, p); err != nil {
				return false, err
			}
		}
	}
	return paint[a]&fromB != 0, nil
}

func hasCommit(s storer.EncodedObjectStorer, h plumbing.Hash) (bool, error) {
	if _, err := object.GetCommit(s, h); err != nil {
		return false, fmt.Errorf("read commit %s: %w", h, err)
	}
	return true, nil
}

type queued struct {
	hash   plumbing.Hash
	commit *object.Commit
}

// commitQueue pops the newest commit (by committer time) first.
type commitQueue []queued

func (q commitQueue) Len() int { return len(q) }
func (q commitQueue) Less(i, j int) bool {
	return q[i].commit.Committer.When.After(q[j].commit.Committer.When)
}
func (q commitQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *commitQueue) Push(x any)   { *q = append(*q, x.(queued)) }
func (q *commitQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// anyNot reports whether some queued commit lacks the paint mask. The queue is as wide as the
// history is at that depth, a handful of commits, so a scan is cheaper than bookkeeping.
func (q commitQueue) anyNot(paint map[plumbing.Hash]uint8, mask uint8) bool {
	for _, e := range q {
		if paint[e.hash]&mask != mask {
			return true
		}
	}
	return false
}
