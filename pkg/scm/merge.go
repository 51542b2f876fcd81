package scm

import "fmt"

// ExplainRefusedMerge turns a refused merge into its outcome, from the pull request as read right
// after the refusal. SCMs answer 405, 406 or 409 for several reasons (already merged, head moved,
// conflicts, closed); one read tells them apart, so a controller never retries a merge that cannot
// succeed. pr may be nil when the read failed; refused is then returned as is.
func ExplainRefusedMerge(provider, op string, pr *PullRequest, expectedHead string, refused *Error) (*MergeResult, error) {
	if pr == nil {
		return nil, refused
	}
	code := refused.StatusCode
	switch {
	case pr.State == PullRequestMerged && pr.HeadSHA == expectedHead:
		return &MergeResult{MergeCommitSHA: pr.MergeCommitSHA, AlreadyMerged: true}, nil
	case pr.HeadSHA != expectedHead:
		return nil, NewError(provider, op, KindHeadMoved, code, fmt.Sprintf(
			"the head of pull request #%d is now %s, not the expected %s: read it again and check the new head before merging",
			pr.Number, pr.HeadSHA, expectedHead), refused)
	case pr.State == PullRequestMerged:
		return nil, NewError(provider, op, KindNotMergeable, code, fmt.Sprintf(
			"pull request #%d was already merged", pr.Number), refused)
	case pr.State == PullRequestClosed:
		return nil, NewError(provider, op, KindNotMergeable, code, fmt.Sprintf(
			"pull request #%d is closed; reopen it or open a new one", pr.Number), refused)
	}
	return nil, NewError(provider, op, KindNotMergeable, code, fmt.Sprintf(
		"the SCM refuses to merge pull request #%d (merge conflicts, required checks or reviews, or branch protection): %s",
		pr.Number, refused.Message), refused)
}
