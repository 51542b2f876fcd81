package gate

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
)

// RevisionsMatch reports whether an approved revision covers an observed one. A revision that
// names a digest or a commit SHA ("main@sha1:<sha>", "v1@sha256:<digest>", "sha256:<digest>", a
// bare SHA) is matched by that digest alone, so approving a commit approves it on any branch or
// tag, and a promotion's dry SHA matches a Flux revision of the same commit. Digests are compared
// in full, never by prefix. Any other revision, such as a chart version, matches only itself.
func RevisionsMatch(approved, observed string) bool {
	if approved == "" || observed == "" {
		return false
	}
	a, aDigest := digestOf(approved)
	o, oDigest := digestOf(observed)
	if aDigest || oDigest {
		return aDigest && oDigest && a == o
	}
	return approved == observed
}

// digestAlgorithms are the prefixes Flux and OCI put before a digest.
var digestAlgorithms = []string{"sha1", "sha256", "sha384", "sha512"}

// digestOf is the lower-case hex digest a revision names, if it names one: the part after the
// last "@" (Flux's "<ref>@<algo>:<hex>"), then an "<algo>:" prefix, or a bare SHA of 40 or 64 hex
// digits (a Git commit), or the SHA after the last "/" of Flux's older "<branch>/<sha>".
func digestOf(revision string) (string, bool) {
	rev := revision
	if i := strings.LastIndex(rev, "@"); i >= 0 {
		rev = rev[i+1:]
	}
	if algo, hex, ok := strings.Cut(rev, ":"); ok {
		if slices.Contains(digestAlgorithms, strings.ToLower(algo)) && isHex(hex) && len(hex) >= 40 {
			return strings.ToLower(hex), true
		}
		return "", false
	}
	if i := strings.LastIndex(rev, "/"); i >= 0 {
		rev = rev[i+1:]
	}
	if (len(rev) == 40 || len(rev) == 64) && isHex(rev) {
		return strings.ToLower(rev), true
	}
	return "", false
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// ActiveApprovals is what status.approvals reports at now: the approvals of spec that have not
// expired, each with when it was approved (as spec says, else as the previous status said, else
// now, when the gate-controller first saw it). next is the first expiry after now, nil if none.
func ActiveApprovals(spec, previous []gatingv1alpha1.GateApproval, now time.Time) (active []gatingv1alpha1.GateApproval, next *time.Time) {
	for _, a := range spec {
		if a.Until != nil && !now.Before(a.Until.Time) {
			continue
		}
		a = *a.DeepCopy()
		if a.At == nil {
			at := metav1.NewTime(now.UTC().Truncate(time.Second))
			if i := slices.IndexFunc(previous, func(p gatingv1alpha1.GateApproval) bool { return p.Revision == a.Revision }); i >= 0 && previous[i].At != nil {
				at = *previous[i].At
			}
			a.At = &at
		}
		if a.Until != nil && (next == nil || a.Until.Before(&metav1.Time{Time: *next})) {
			until := a.Until.UTC()
			next = &until
		}
		active = append(active, a)
	}
	return active, next
}

// SummarizeApprovals is the Approved column: the approved revisions, digests shortened to 12
// hex digits, at most three of them and a count of the rest.
func SummarizeApprovals(approvals []gatingv1alpha1.GateApproval) string {
	names := make([]string, len(approvals))
	for i, a := range approvals {
		names[i] = shortRevision(a.Revision)
	}
	if len(names) <= maxSummarized {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxSummarized], ", "), len(names)-maxSummarized)
}

const maxSummarized = 3

// shortRevision shortens the digest of a revision for people to read.
func shortRevision(revision string) string {
	hex, ok := digestOf(revision)
	if !ok {
		return revision
	}
	i := strings.LastIndex(strings.ToLower(revision), hex)
	return revision[:i] + hex[:12]
}

// approvalOf is the approval in g's status that lets revision through at now.
func approvalOf(g *gatingv1alpha1.Gate, revision string, now time.Time) (gatingv1alpha1.GateApproval, bool) {
	for _, a := range g.Status.Approvals {
		if RevisionsMatch(a.Revision, revision) && (a.Until == nil || now.Before(a.Until.Time)) {
			return a, true
		}
	}
	return gatingv1alpha1.GateApproval{}, false
}

// describeApproval says who approved what, for a verdict's message.
func describeApproval(a gatingv1alpha1.GateApproval) string {
	s := "approves " + shortRevision(a.Revision)
	if a.By != "" {
		s += " (by " + a.By + ")"
	}
	return s
}

// NeedsRevision reports whether a verdict over refs depends on the revision of the target: one
// of the gates is closed and approves revisions. Gates that cannot be read are left to Allows.
func NeedsRevision(refs []Ref, lookup func(namespace, name string) (*gatingv1alpha1.Gate, error)) bool {
	for _, ref := range refs {
		g, err := lookup(ref.Namespace, ref.Name)
		if err == nil && g != nil && !g.Status.Open && len(g.Status.Approvals) > 0 {
			return true
		}
	}
	return false
}
