package soak

import "fmt"

// Step is one move of an environment branch along its first-parent history: the commit it
// brought in and what the branch ran before and after.
type Step struct {
	// SHA is the branch's new commit; Parent its first parent, the commit before.
	SHA, Parent string
	// Dry and ParentDry are the dry SHAs the hydrator's metadata names in each tree.
	Dry, ParentDry string
	// Revert is the RevertCommit (namespace/name) the commit brought in says it carries, from
	// its Sluice-Revert-Commit trailer; empty for a promotion.
	Revert string
	// RevertedDry is the dry SHA the revert says it reverts (Sluice-Reverted-Dry-SHA).
	RevertedDry string
}

// Violation is an invariant broken, with what shows it.
type Violation struct {
	Invariant int
	Where     string
	What      string
}

func (v Violation) String() string {
	return fmt.Sprintf("invariant %d at %s: %s", v.Invariant, v.Where, v.What)
}

// CheckHistory checks the steps of one environment branch, oldest first, against the
// invariants that git alone shows. seq numbers the hydrator's dry commits in the order they
// were made (the first commits of a repository, unknown to it, count as 0).
//   - 1: a dry commit is promoted into the branch at most once;
//   - 2: the branch goes back to an older dry commit only through a revert;
//   - 3: a revert never lands on a newer dry commit than the one it reverts (a fix forward);
//   - 5: a dry commit reverted is never promoted into the branch again.
func CheckHistory(where string, steps []Step, seq map[string]int) []Violation {
	var out []Violation
	promoted := map[string]string{}
	reverted := map[string]string{}
	for _, s := range steps {
		if s.Revert != "" {
			if s.RevertedDry != "" && seq[s.ParentDry] > seq[s.RevertedDry] {
				out = append(out, Violation{3, where, fmt.Sprintf("revert %s (%s) of dry %s landed on dry %s, a newer fix forward", short(s.SHA), s.Revert, short(s.RevertedDry), short(s.ParentDry))})
			}
			if s.RevertedDry != "" {
				reverted[s.RevertedDry] = s.SHA
			}
			continue
		}
		if s.Dry == s.ParentDry {
			continue
		}
		if first, ok := promoted[s.Dry]; ok {
			out = append(out, Violation{1, where, fmt.Sprintf("dry %s promoted twice: %s and %s", short(s.Dry), short(first), short(s.SHA))})
		}
		promoted[s.Dry] = s.SHA
		if seq[s.Dry] < seq[s.ParentDry] {
			out = append(out, Violation{2, where, fmt.Sprintf("%s went back from dry %s to the older %s without a revert", short(s.SHA), short(s.ParentDry), short(s.Dry))})
		}
		if rev, ok := reverted[s.Dry]; ok {
			out = append(out, Violation{5, where, fmt.Sprintf("dry %s, reverted by %s, promoted again by %s", short(s.Dry), short(rev), short(s.SHA))})
		}
	}
	return out
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
