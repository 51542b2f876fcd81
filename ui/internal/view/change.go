package view

import (
	"net/url"
	"strings"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
)

// Change links what changed between two commits of an environment: the dry commits on the
// SCM's compare page, and the hydrated manifests on the UI's own diff page.
type Change struct {
	// CompareURL is the SCM's compare page of the dry commits; "" on plain git.
	CompareURL string
	// DiffURL is the UI's per-file diff of the hydrated branch.
	DiffURL string
}

// Compare is the SCM's page comparing commit from with to (GitHub, Gitea and Forgejo at
// /compare/FROM...TO, GitLab at /-/compare/FROM...TO), or "" when there is none.
func (l Links) Compare(from, to string) string {
	if l.base == "" || from == "" || to == "" || from == to {
		return ""
	}
	return l.base + strings.Replace(l.commitSeg, "commit", "compare", 1) + from + "..." + to
}

// DiffPath is the UI's diff of environment branch of strategy namespace/name from hydrated
// commit from (empty: to's first parent) to to.
func DiffPath(namespace, name, branch, from, to string) string {
	q := url.Values{"env": {branch}, "to": {to}}
	if from != "" {
		q.Set("from", from)
	}
	return "/pipelines/" + url.PathEscape(namespace) + "/" + url.PathEscape(name) + "/diff?" + q.Encode()
}

// environmentChange is the change a promotion of the proposed commit would bring, or nil when
// the environment runs what it is offered.
func environmentChange(links Links, s *promoterv1alpha1.PromotionStrategy, branch string, active, proposed Commit) *Change {
	c := &Change{CompareURL: links.Compare(active.DrySHA, proposed.DrySHA)}
	if active.HydratedSHA != "" && proposed.HydratedSHA != "" && active.HydratedSHA != proposed.HydratedSHA {
		c.DiffURL = DiffPath(s.Namespace, s.Name, branch, active.HydratedSHA, proposed.HydratedSHA)
	}
	if c.CompareURL == "" && c.DiffURL == "" {
		return nil
	}
	return c
}

// promotionChange is the change one promotion brought to environment branch: from the dry
// commit and the branch's tip the promotion before it left (history is newest first), or, for
// the oldest one kept, from its merge's first parent.
func promotionChange(links Links, s *promoterv1alpha1.PromotionStrategy, branch string, history []promoterv1alpha1.PromotionRecord, i int) Change {
	rec := history[i]
	to := cmpOr(rec.MergeSHA, rec.HydratedSHA)
	var c Change
	var fromTip string
	if i+1 < len(history) {
		prev := history[i+1]
		c.CompareURL = links.Compare(prev.DrySHA, rec.DrySHA)
		fromTip = cmpOr(prev.MergeSHA, prev.HydratedSHA)
	}
	if to != "" && to != fromTip {
		c.DiffURL = DiffPath(s.Namespace, s.Name, branch, fromTip, to)
	}
	return c
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
