package repository

import (
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/promotion"
	"github.com/sluicehq/sluice/promoter-controller/internal/text"
)

// maxMergeDepth bounds the walk through merge commits in search of a dry SHA.
const maxMergeDepth = 8

// DrySHAOf returns the dry commit of hydrated commit sha. A merge commit made by a promotion has
// no hydrator note of its own, so its dry SHA is that of the proposed commit it merged, its second
// parent: this is what the proposal calls copying the note from the source on merge, without
// writing to the notes ref that the hydrator owns.
func DrySHAOf(repo *git.Repository, sha string) (string, error) {
	for range maxMergeDepth {
		d, err := repo.DrySHA(sha)
		if err == nil && d.Source == git.DrySourceNote {
			return d.SHA, nil
		}
		if err != nil && !errors.Is(err, git.ErrNoDrySHA) {
			return "", err
		}
		// Without a note of its own, a merge commit takes the tree of the proposed commit
		// it merged, metadata file included; that commit's note, if any, is the newer word.
		c, cerr := repo.Commit(sha)
		if cerr != nil || len(c.Parents) < 2 {
			return d.SHA, err
		}
		sha = c.Parents[1]
	}
	return "", git.ErrNoDrySHA
}

// Describe fills a CommitState for hydrated commit sha: its dry SHA, and the time and subject of
// the dry commit when the cache has it (it does after fetching the dry branch), else of sha.
func Describe(repo *git.Repository, sha string) promoterv1alpha1.CommitState {
	if sha == "" {
		return promoterv1alpha1.CommitState{}
	}
	cs := promoterv1alpha1.CommitState{HydratedSHA: sha}
	cs.DrySHA, _ = DrySHAOf(repo, sha)
	info, err := repo.Commit(cs.DrySHA)
	if cs.DrySHA == "" || err != nil {
		info, err = repo.Commit(sha)
	}
	if err == nil {
		t := metav1.NewTime(info.Time.UTC().Truncate(time.Second))
		cs.CommitTime = &t
		cs.Subject = text.Truncate(info.Subject, 256)
	}
	return cs
}

// CompareDry says where dry commit x stands relative to y on the dry branch, as last fetched.
func CompareDry(repo *git.Repository, branch, x, y string) (promotion.Order, error) {
	order, err := repo.CompareOnBranch(branch, x, y)
	if err != nil {
		return 0, err
	}
	switch order {
	case git.OrderSame:
		return promotion.Same, nil
	case git.OrderAfter:
		return promotion.Newer, nil
	case git.OrderBefore:
		return promotion.Older, nil
	}
	return promotion.Unrelated, nil
}
