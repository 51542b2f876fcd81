package gate

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
)

var (
	sha1A   = strings.Repeat("a", 40)
	sha1B   = strings.Repeat("b", 40)
	digestC = strings.Repeat("c", 64)
)

func TestRevisionsMatch(t *testing.T) {
	cases := []struct {
		name               string
		approved, observed string
		match              bool
	}{
		{"a Flux revision matches itself", "main@sha1:" + sha1A, "main@sha1:" + sha1A, true},
		{"a commit is approved on any branch", "main@sha1:" + sha1A, "release@sha1:" + sha1A, true},
		{"a bare SHA matches a Flux revision of the commit", sha1A, "main@sha1:" + sha1A, true},
		{"a Flux revision matches a bare dry SHA", "main@sha1:" + sha1A, sha1A, true},
		{"case does not matter in a digest", strings.ToUpper(sha1A), "main@sha1:" + sha1A, true},
		{"another commit does not match", "main@sha1:" + sha1A, "main@sha1:" + sha1B, false},
		{"an OCI digest matches a tagged artifact", "sha256:" + digestC, "v1.2.0@sha256:" + digestC, true},
		{"an OCI digest does not match another", "sha256:" + digestC, "v1.2.0@sha256:" + strings.Repeat("d", 64), false},
		{"Flux's older branch/sha revision", sha1A, "main/" + sha1A, true},
		{"a prefix never matches", sha1A[:12], "main@sha1:" + sha1A, false},
		{"a chart version matches itself", "6.0.1", "6.0.1", true},
		{"a chart version does not match another", "6.0.1", "6.0.2", false},
		{"a version does not match a digest", "6.0.1", "6.0.1@sha256:" + digestC, false},
		{"nothing approves an unknown revision", sha1A, "", false},
		{"an empty approval approves nothing", "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.match, RevisionsMatch(c.approved, c.observed))
		})
	}
}

func TestActiveApprovals(t *testing.T) {
	now := time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
	spec := []gatingv1alpha1.GateApproval{
		{Revision: "r1", By: "alice", At: at(-time.Hour)},
		{Revision: "r2", Until: at(-time.Minute)},
		{Revision: "r3", Until: at(2 * time.Hour)},
		{Revision: "r4", Until: at(time.Hour)},
	}
	previous := []gatingv1alpha1.GateApproval{{Revision: "r3", At: at(-3 * time.Hour)}}

	active, next := ActiveApprovals(spec, previous, now)
	require.Len(t, active, 3, "the expired approval of r2 is dropped")
	assert.Equal(t, []string{"r1", "r3", "r4"}, []string{active[0].Revision, active[1].Revision, active[2].Revision})
	assert.Equal(t, "alice", active[0].By)
	assert.True(t, active[0].At.Equal(at(-time.Hour)), "the time spec gives is kept")
	assert.True(t, active[1].At.Equal(at(-3*time.Hour)), "the time the previous status gave is kept")
	assert.True(t, active[2].At.Equal(at(0)), "an approval seen first now is dated now")
	require.NotNil(t, next)
	assert.Equal(t, now.Add(time.Hour), *next, "the earliest expiry still ahead")
	assert.Nil(t, spec[3].At, "spec is not changed")

	_, next = ActiveApprovals(spec[:1], nil, now)
	assert.Nil(t, next, "nothing expires")
}

func TestSummarizeApprovals(t *testing.T) {
	approvals := []gatingv1alpha1.GateApproval{
		{Revision: "main@sha1:" + sha1A}, {Revision: "sha256:" + digestC}, {Revision: "6.0.1"}, {Revision: sha1B}, {Revision: "7.0.0"},
	}
	assert.Equal(t, "main@sha1:aaaaaaaaaaaa, sha256:cccccccccccc, 6.0.1 and 2 more", SummarizeApprovals(approvals))
	assert.Equal(t, "bbbbbbbbbbbb", SummarizeApprovals(approvals[3:4]))
	assert.Empty(t, SummarizeApprovals(nil))
}

func TestAllowsForApprovedRevisions(t *testing.T) {
	now := time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)
	until := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
	prod := Ref{"flux-system", "prod"}
	freeze := Ref{"flux-system", "freeze"}
	approving := evaluatedGate("flux-system", "prod", false, gatingv1alpha1.ReasonManual, "sign-off pending")
	approving.Status.Approvals = []gatingv1alpha1.GateApproval{
		{Revision: "main@sha1:" + sha1A, By: "alice"},
		{Revision: "6.0.1", Until: until(-time.Second)},
	}
	stale := approving.DeepCopy()
	stale.Generation++
	store := gateStore{prod: approving, freeze: evaluatedGate("flux-system", "freeze", false, gatingv1alpha1.ReasonManual, "")}

	cases := []struct {
		name       string
		subject    Subject
		refs       []Ref
		require    Require
		store      gateStore
		allowed    bool
		messageHas string
	}{
		{name: "an approved revision passes the closed gate", subject: Subject{Revision: "main@sha1:" + sha1A, Now: now},
			refs: []Ref{prod}, allowed: true, messageHas: "approves main@sha1:aaaaaaaaaaaa (by alice)"},
		{name: "the same commit as a dry SHA passes", subject: Subject{Revision: sha1A, Now: now}, refs: []Ref{prod}, allowed: true},
		{name: "another revision is held, and told what is approved", subject: Subject{Revision: "main@sha1:" + sha1B, Now: now},
			refs: []Ref{prod}, messageHas: "it approves main@sha1:aaaaaaaaaaaa, 6.0.1, not main@sha1:bbbbbbbbbbbb"},
		{name: "an expired approval does not pass, even while status still lists it", subject: Subject{Revision: "6.0.1", Now: now}, refs: []Ref{prod}},
		{name: "an unknown revision is held with the reason", subject: Subject{Unknown: "spec.sourceRef names no source", Now: now},
			refs: []Ref{prod}, messageHas: "the revision here is not known: spec.sourceRef names no source"},
		{name: "a gate not yet evaluated approves nothing", subject: Subject{Revision: "main@sha1:" + sha1A, Now: now},
			refs: []Ref{prod}, store: gateStore{prod: stale}},
		{name: "every gate must let it through under all", subject: Subject{Revision: "main@sha1:" + sha1A, Now: now},
			refs: []Ref{prod, freeze}, messageHas: "gate flux-system/freeze is closed"},
		{name: "one approving gate is enough under oneOf", subject: Subject{Revision: "main@sha1:" + sha1A, Now: now},
			refs: []Ref{prod, freeze}, require: RequireOneOf, allowed: true},
		{name: "without a revision nothing is approved", refs: []Ref{prod}, messageHas: "it approves main@sha1:aaaaaaaaaaaa, 6.0.1 only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := store
			if c.store != nil {
				s = c.store
			}
			v := AllowsFor(c.subject, c.refs, c.require, s.lookup)
			assert.Equal(t, c.allowed, v.Allowed, v.Message)
			assert.Contains(t, v.Message, c.messageHas)
		})
	}
}

func TestNeedsRevision(t *testing.T) {
	closed := evaluatedGate("ns", "closed", false, gatingv1alpha1.ReasonManual, "")
	approving := closed.DeepCopy()
	approving.Name = "approving"
	approving.Status.Approvals = []gatingv1alpha1.GateApproval{{Revision: sha1A}}
	openApproving := evaluatedGate("ns", "open", true, gatingv1alpha1.ReasonDefault, "")
	openApproving.Status.Approvals = approving.Status.Approvals
	store := gateStore{{"ns", "closed"}: closed, {"ns", "approving"}: approving, {"ns", "open"}: openApproving}

	assert.False(t, NeedsRevision([]Ref{{"ns", "closed"}, {"ns", "open"}, {"ns", "missing"}}, store.lookup))
	assert.True(t, NeedsRevision([]Ref{{"ns", "closed"}, {"ns", "approving"}}, store.lookup))
}
