package health_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sluicehq/sluice/pkg/health"
)

var (
	groupReady = health.Check{APIVersion: "example.org/v1",
		Failed:  "status.?conditions.orValue([]).exists(c, c.type == 'Ready' && c.status == 'False')",
		Current: "status.?conditions.orValue([]).exists(c, c.type == 'Ready' && c.status == 'True')"}
	gadgetPhase = health.Check{APIVersion: "example.org/v1", Kind: "Gadget",
		Failed:  "status.?phase.orValue('') == 'Broken'",
		Current: "status.?phase.orValue('') == 'Running'"}
)

func TestGroupWideEntryCoversEveryKindAndVersion(t *testing.T) {
	e := evaluator(t, []health.Check{groupReady}, nil, nil)
	for _, doc := range []string{
		`{apiVersion: example.org/v1, kind: Widget, metadata: {name: a}, status: {conditions: [{type: Ready, status: "True"}]}}`,
		`{apiVersion: example.org/v1beta1, kind: Sprocket, metadata: {name: b}, status: {conditions: [{type: Ready, status: "True"}]}}`,
	} {
		assert.Equal(t, health.Current, e.Evaluate(object(t, doc)).Status, doc)
	}
	failed := e.Evaluate(object(t, `{apiVersion: example.org/v2, kind: Widget, metadata: {name: c}, status: {conditions: [{type: Ready, status: "False"}]}}`))
	assert.Equal(t, health.Failed, failed.Status)
}

func TestKindEntryOverridesGroupEntry(t *testing.T) {
	e := evaluator(t, []health.Check{groupReady, gadgetPhase}, nil, nil)
	// Ready=True would be Current under the group entry; the Gadget entry
	// looks at the phase instead.
	gadget := `{apiVersion: example.org/v1, kind: Gadget, metadata: {name: g}, status: {phase: Broken, conditions: [{type: Ready, status: "True"}]}}`
	assert.Equal(t, health.Failed, e.Evaluate(object(t, gadget)).Status)
	widget := `{apiVersion: example.org/v1, kind: Widget, metadata: {name: w}, status: {phase: Broken, conditions: [{type: Ready, status: "True"}]}}`
	assert.Equal(t, health.Current, e.Evaluate(object(t, widget)).Status)
}

func TestKindEntryMatchesItsVersionOnly(t *testing.T) {
	r, err := health.Resolve([]health.Check{gadgetPhase}, nil, nil)
	require.NoError(t, err)
	_, ok := r.Match(schema.GroupVersionKind{Group: "example.org", Version: "v1", Kind: "Gadget"})
	assert.True(t, ok)
	_, ok = r.Match(schema.GroupVersionKind{Group: "example.org", Version: "v2", Kind: "Gadget"})
	assert.False(t, ok, "status schemas can change between versions, as Cluster API's did")
	_, ok = r.Match(schema.GroupVersionKind{Group: "other.org", Version: "v1", Kind: "Gadget"})
	assert.False(t, ok)
}

func TestSourcePrecedence(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.org", Version: "v1", Kind: "Gadget"}
	userGadget := gadgetPhase
	userGadget.Current = "true"
	cases := []struct {
		name                string
		spec, user, builtin []health.Check
		want                health.Check
		source              health.Source
	}{
		{"spec beats user and built-in", []health.Check{gadgetPhase}, []health.Check{userGadget}, []health.Check{groupReady}, gadgetPhase, health.SourceSpec},
		{"user beats built-in", nil, []health.Check{userGadget}, []health.Check{gadgetPhase}, userGadget, health.SourceUser},
		{"built-in when alone", nil, nil, []health.Check{gadgetPhase}, gadgetPhase, health.SourceBuiltin},
		{"a spec group entry beats a built-in kind entry", []health.Check{groupReady}, nil, []health.Check{gadgetPhase}, groupReady, health.SourceSpec},
		{"within a source the kind entry wins", nil, []health.Check{groupReady, userGadget}, nil, userGadget, health.SourceUser},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := health.Resolve(c.spec, c.user, c.builtin)
			require.NoError(t, err)
			m, ok := r.Match(gvk)
			require.True(t, ok)
			assert.Equal(t, c.want, m.Check)
			assert.Equal(t, c.source, m.Source)
		})
	}
}

func TestLayersAreReusable(t *testing.T) {
	lib, err := health.NewLayer(health.SourceBuiltin, builtin(t))
	require.NoError(t, err)
	spec, err := health.NewLayer(health.SourceSpec, []health.Check{gadgetPhase})
	require.NoError(t, err)
	r := health.NewResolver(spec, nil, lib)
	m, ok := r.Match(schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"})
	require.True(t, ok)
	assert.Equal(t, health.SourceBuiltin, m.Source)
	m, ok = r.Match(schema.GroupVersionKind{Group: "example.org", Version: "v1", Kind: "Gadget"})
	require.True(t, ok)
	assert.Equal(t, health.SourceSpec, m.Source)
}

func TestResolveReportsEveryBadEntryWithItsSource(t *testing.T) {
	_, err := health.Resolve(
		[]health.Check{{APIVersion: "example.org/v1", Kind: "Widget"}},
		[]health.Check{gadgetPhase, gadgetPhase},
		nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec entry 0 (example.org/v1 Widget): the current expression is required")
	assert.Contains(t, err.Error(), "user library entry 1: a second check for example.org/v1 Gadget")
}

func TestUnmatchedKindsUseKstatus(t *testing.T) {
	e := evaluator(t, []health.Check{groupReady}, nil, nil)
	// kstatus reads Reconciling=True as InProgress; the group entry for
	// example.org would have said InProgress too, so use a Stalled object
	// that only kstatus calls Failed.
	got := e.Evaluate(object(t, `{apiVersion: other.org/v1, kind: Widget, metadata: {name: w, generation: 1},
		status: {observedGeneration: 1, conditions: [{type: Stalled, status: "True", reason: Broken, message: "stalled"}]}}`))
	assert.Equal(t, health.Failed, got.Status)
	assert.Equal(t, "stalled", got.Message)
}
