package hold

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/suspend"
)

var (
	closed = Verdict{Hold: true, Reason: "held by gate apps/prod is closed (Manual)", Gates: []string{"apps/prod"}}
	open   = Verdict{Hold: false, Reason: "open: apps/prod"}
)

func annotated(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func recordValue(r Record) string { return r.String() }

func TestDecideHoldsAFreeTargetByItsMode(t *testing.T) {
	cases := []struct {
		mode Mode
		set  []Change
	}{
		{ModeBoth, []Change{ChangeAnnotation, ChangeSpec}},
		{ModeAnnotation, []Change{ChangeAnnotation}},
		{ModeSpec, []Change{ChangeSpec}},
	}
	for _, c := range cases {
		t.Run(string(c.mode), func(t *testing.T) {
			p := Decide(Target{}, c.mode, closed)
			require.True(t, p.Apply)
			assert.Equal(t, OutcomeHeld, p.Outcome)
			assert.Equal(t, c.set, p.Desired.Record.Set)
			assert.Equal(t, closed.Gates, p.Desired.Record.Gates)
			value, ok := p.Desired.Annotation()
			assert.Equal(t, c.mode != ModeSpec, ok)
			if ok {
				assert.Equal(t, closed.Reason, value)
			}
			assert.Equal(t, c.mode != ModeAnnotation, p.Desired.Spec())
		})
	}
}

func TestDecideKeepsSomeoneElsesSuspendAnnotation(t *testing.T) {
	target := Target{Annotations: annotated(suspend.Annotation, "database migration")}
	p := Decide(target, ModeBoth, closed)
	require.True(t, p.Apply)
	assert.Equal(t, []Change{ChangeSpec}, p.Desired.Record.Set, "only spec.suspend, co-owned if it is already true")
	_, ok := p.Desired.Annotation()
	assert.False(t, ok)

	p = Decide(target, ModeAnnotation, closed)
	require.True(t, p.Apply, "the record is still written, so the hold and its reason are visible")
	assert.Empty(t, p.Desired.Record.Set)
	assert.Equal(t, closed.Reason, p.Desired.Record.Reason)
}

func TestDecideDoesNothingWhenTheTargetAlreadyCarriesTheHold(t *testing.T) {
	rec := Record{Gates: closed.Gates, Reason: closed.Reason, Set: []Change{ChangeAnnotation, ChangeSpec}}
	target := Target{
		Annotations: annotated(RecordAnnotation, recordValue(rec), suspend.Annotation, closed.Reason),
		Owned:       Owned{Record: true, Annotation: true, Spec: true},
	}
	p := Decide(target, ModeBoth, closed)
	assert.False(t, p.Apply)
	assert.Equal(t, OutcomeNone, p.Outcome)

	// A new reason (the gate's message changed) rewrites the record and the annotation only.
	newer := closed
	newer.Reason = "held by gate apps/prod is closed (Window: closed by window \"No Deploy Friday\")"
	p = Decide(target, ModeBoth, newer)
	require.True(t, p.Apply)
	assert.Equal(t, OutcomeNone, p.Outcome)
	value, _ := p.Desired.Annotation()
	assert.Equal(t, newer.Reason, value)
	assert.True(t, p.Desired.Spec())

	// The mode a kind is configured with later does not change a hold already in place.
	p = Decide(target, ModeAnnotation, closed)
	assert.False(t, p.Apply)
}

func TestDecideReleasesExactlyWhatItOwns(t *testing.T) {
	rec := Record{Gates: closed.Gates, Reason: closed.Reason, Set: []Change{ChangeSpec}}
	target := Target{
		Annotations: annotated(RecordAnnotation, recordValue(rec), suspend.Annotation, "someone else's"),
		Owned:       Owned{Record: true, Spec: true},
	}
	p := Decide(target, ModeBoth, open)
	require.True(t, p.Apply)
	assert.Equal(t, OutcomeReleased, p.Outcome)
	assert.Nil(t, p.Desired.Record, "an empty configuration gives up every field the controller owns")
	u := p.Desired.ApplyObject(Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "n", UID: "u", ResourceVersion: "7"})
	assert.Empty(t, u.GetAnnotations())
	assert.NotContains(t, u.Object, "spec")

	assert.False(t, Decide(Target{}, ModeBoth, open).Apply, "a target that was never held needs nothing")
	// A record someone else wrote is not the controller's to remove.
	forged := Target{Annotations: annotated(RecordAnnotation, recordValue(rec))}
	assert.False(t, Decide(forged, ModeBoth, open).Apply)
}

func TestDecideYieldsToAPersonWhoResumedTheTarget(t *testing.T) {
	rec := Record{Gates: closed.Gates, Reason: closed.Reason, Set: []Change{ChangeAnnotation, ChangeSpec}}
	value := recordValue(rec)
	cases := map[string]Target{
		// `flux resume`: spec.suspend set to false, so the controller no longer owns it.
		"spec.suspend rewritten": {
			Annotations: annotated(RecordAnnotation, value, suspend.Annotation, closed.Reason),
			Owned:       Owned{Record: true, Annotation: true},
		},
		// `kubectl gate resume`: the annotation removed.
		"annotation removed": {
			Annotations: annotated(RecordAnnotation, value),
			Owned:       Owned{Record: true, Spec: true},
		},
	}
	for name, target := range cases {
		t.Run(name, func(t *testing.T) {
			p := Decide(target, ModeBoth, closed)
			require.True(t, p.Apply)
			assert.Equal(t, OutcomeYielded, p.Outcome)
			assert.True(t, p.Desired.Record.Yielded)
			assert.Empty(t, p.Desired.Record.Set, "what the controller still owns is given up")

			yielded := Target{Annotations: annotated(RecordAnnotation, recordValue(*p.Desired.Record)), Owned: Owned{Record: true}}
			again := Decide(yielded, ModeBoth, closed)
			assert.False(t, again.Apply, "no hold again while the gates stay closed")
			released := Decide(yielded, ModeBoth, open)
			assert.True(t, released.Apply, "the record goes when the gates allow")
			assert.Equal(t, OutcomeNone, released.Outcome, "nothing was held, so nothing is released")
		})
	}
}

func TestDecideLeavesARewrittenReasonToItsAuthor(t *testing.T) {
	rec := Record{Gates: closed.Gates, Reason: closed.Reason, Set: []Change{ChangeAnnotation, ChangeSpec}}
	target := Target{
		Annotations: annotated(RecordAnnotation, recordValue(rec), suspend.Annotation, "mine now: wait for the DBA"),
		Owned:       Owned{Record: true, Spec: true},
	}
	p := Decide(target, ModeBoth, closed)
	require.True(t, p.Apply)
	assert.Equal(t, OutcomeNone, p.Outcome)
	assert.Equal(t, []Change{ChangeSpec}, p.Desired.Record.Set, "still held, without the annotation someone took over")
}

func TestDecideTakesOverWhenSomeoneElsesSuspensionEnds(t *testing.T) {
	rec := Record{Gates: closed.Gates, Reason: closed.Reason}
	target := Target{Annotations: annotated(RecordAnnotation, recordValue(rec)), Owned: Owned{Record: true}}
	p := Decide(target, ModeAnnotation, closed)
	require.True(t, p.Apply)
	assert.Equal(t, []Change{ChangeAnnotation}, p.Desired.Record.Set)
	value, ok := p.Desired.Annotation()
	assert.True(t, ok)
	assert.Equal(t, closed.Reason, value)
}

func TestApplyObjectCarriesPreconditions(t *testing.T) {
	p := Decide(Target{}, ModeBoth, closed)
	u := p.Desired.ApplyObject(Ref{
		APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Namespace: "apps", Name: "web",
		UID: "1234", ResourceVersion: "42",
	})
	assert.Equal(t, "kustomize.toolkit.fluxcd.io/v1", u.GetAPIVersion())
	assert.Equal(t, "Kustomization", u.GetKind())
	assert.Equal(t, "1234", string(u.GetUID()), "a deleted target is never recreated")
	assert.Equal(t, "42", u.GetResourceVersion(), "never applied over an edit the cache has not seen")
	assert.Equal(t, closed.Reason, u.GetAnnotations()[suspend.Annotation])
	rec, err := ParseRecord(u.GetAnnotations()[RecordAnnotation])
	require.NoError(t, err)
	assert.Equal(t, *p.Desired.Record, rec)
	assert.Equal(t, map[string]any{"suspend": true}, u.Object["spec"])
}

func TestParseMode(t *testing.T) {
	for _, m := range []string{"annotation", "spec", "both", " both "} {
		_, err := ParseMode(m)
		assert.NoError(t, err, m)
	}
	_, err := ParseMode("Both")
	assert.ErrorContains(t, err, "annotation, spec or both")
}

// A hold by thousands of gates, or for a 200 KB reason, still fits on the target: the record and
// the annotation are bounded.
func TestDecideBoundsTheHold(t *testing.T) {
	gates := make([]string, 20_000)
	for i := range gates {
		gates[i] = fmt.Sprintf("apps/gate-%05d", i)
	}
	v := Verdict{Hold: true, Reason: strings.Repeat("ü", 100_000), Gates: gates}
	p := Decide(Target{}, ModeBoth, v)
	require.True(t, p.Apply)
	rec := p.Desired.Record
	assert.Len(t, rec.Gates, MaxGates)
	assert.Equal(t, 20_000-MaxGates, rec.MoreGates)
	assert.LessOrEqual(t, len(rec.Reason), MaxReason)
	assert.True(t, utf8.ValidString(rec.Reason))
	u := p.Desired.ApplyObject(Ref{APIVersion: "v1", Kind: "ConfigMap", Name: "x"})
	size := 0
	for k, v := range u.GetAnnotations() {
		size += len(k) + len(v)
	}
	assert.Less(t, size, 16*1024, "the hold's own annotations stay small beside the target's")

	// The same verdict again changes nothing.
	target := Target{
		Annotations: annotated(RecordAnnotation, rec.String(), suspend.Annotation, rec.Reason),
		Owned:       Owned{Record: true, Annotation: true, Spec: true},
	}
	assert.False(t, Decide(target, ModeBoth, v).Apply)
}

func TestSpecOnlyApplyObjectHoldsBySpecAlone(t *testing.T) {
	u := SpecOnlyApplyObject(Ref{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Namespace: "apps", Name: "web", UID: "u1"})
	assert.Empty(t, u.GetAnnotations())
	assert.Equal(t, map[string]any{"suspend": true}, u.Object["spec"])
	assert.Equal(t, "u1", string(u.GetUID()))
}

func TestDecideMarksAHoldThatDeniesManualSyncs(t *testing.T) {
	deny := closed
	deny.DenyManualSyncs = true
	app := Ref{APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Namespace: "apps", Name: "shop"}

	p := Decide(Target{}, ModeSpec, deny)
	require.True(t, p.Apply)
	assert.True(t, p.Desired.Record.DenyManualSyncs)
	assert.Equal(t, ManualSyncsDeny, p.Desired.ApplyObject(app).GetAnnotations()[ManualSyncsAnnotation])
	allow := Decide(Target{}, ModeSpec, closed)
	assert.NotContains(t, allow.Desired.ApplyObject(app).GetAnnotations(), ManualSyncsAnnotation, "a gate that allows manual syncs leaves no mark")

	rec := *p.Desired.Record
	marked := Target{
		Annotations: annotated(RecordAnnotation, recordValue(rec), ManualSyncsAnnotation, ManualSyncsDeny),
		Owned:       Owned{Record: true, Spec: true},
	}
	assert.False(t, Decide(marked, ModeSpec, deny).Apply, "a target that carries the mark is left alone")
	assert.True(t, Decide(marked, ModeSpec, closed).Apply, "a gate switched to Allow takes the mark away")
	unmarked := marked
	unmarked.Annotations = annotated(RecordAnnotation, recordValue(rec))
	assert.True(t, Decide(unmarked, ModeSpec, deny).Apply, "a mark someone removed is put back while the gate denies")

	// Someone who resumes the Application takes it over whole: no mark is left to refuse their syncs.
	resumed := Target{Annotations: marked.Annotations, Owned: Owned{Record: true}}
	yielded := Decide(resumed, ModeSpec, deny)
	assert.Equal(t, OutcomeYielded, yielded.Outcome)
	assert.False(t, yielded.Desired.Record.DenyManualSyncs)
	assert.NotContains(t, yielded.Desired.ApplyObject(app).GetAnnotations(), ManualSyncsAnnotation)
}
