package crdwatch_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/pkg/runtime/crdwatch"
	"github.com/sluicehq/sluice/testenv"
)

func partial(apiVersion, kind, namespace, name string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
	}
}

func crd(name string) *metav1.PartialObjectMetadata {
	return partial("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", name)
}

// A kind's informer runs only once its CRD is installed; until then the kind is Missing, and the
// controller is ready without it. Installing or removing a CRD later is told to OnChange.
func TestKindsStartEachInformerWhenItsCRDIsInstalled(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	client := metadatafake.NewSimpleMetadataClient(scheme,
		crd("gates.gating.sluice.dev"), partial("gating.sluice.dev/v1alpha1", "Gate", "team", "prod"))
	gates := schema.GroupResource{Group: "gating.sluice.dev", Resource: "gates"}
	widgets := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	informer := func(gr schema.GroupResource) cache.SharedIndexInformer {
		return metadatainformer.NewFilteredMetadataInformer(client, gr.WithVersion("v1alpha1"), "", 0, cache.Indexers{}, nil).Informer()
	}

	kinds, err := crdwatch.NewKinds(client)
	require.NoError(t, err)
	gateInformer, widgetInformer := informer(gates), informer(widgets)
	kinds.Add(gates, gateInformer)
	kinds.Add(widgets, widgetInformer)
	var changes atomic.Int32
	kinds.OnChange(func() { changes.Add(1) })
	assert.False(t, kinds.HasSynced())
	assert.False(t, kinds.Listed())
	assert.Equal(t, []schema.GroupResource{gates, widgets}, kinds.Missing(gates, widgets), "nothing is known before the CRDs are listed")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = kinds.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	wait := func(what string, cond func() bool) {
		t.Helper()
		require.NoError(t, testenv.Wait(ctx, 10*time.Second, func(context.Context) (bool, error) { return cond(), nil }), what)
	}

	wait("synced", kinds.HasSynced)
	assert.True(t, kinds.Listed())
	assert.True(t, kinds.Synced(gates))
	assert.Len(t, gateInformer.GetStore().List(), 1, "the installed kind is read before the controller is ready")
	assert.Equal(t, []schema.GroupResource{widgets}, kinds.Missing(gates, widgets))
	assert.False(t, kinds.Synced(widgets))
	assert.False(t, widgetInformer.HasSynced(), "the informer of a kind without its CRD is not run")
	wait("told that gates synced", func() bool { return changes.Load() >= 1 })

	before := changes.Load()
	require.NoError(t, client.Tracker().Add(crd("widgets.example.com")))
	wait("widgets synced", func() bool { return kinds.Synced(widgets) })
	wait("told that widgets came", func() bool { return changes.Load() > before })
	assert.Empty(t, kinds.Missing(gates, widgets))

	before = changes.Load()
	require.NoError(t, client.Resource(crdwatch.Resource).Delete(ctx, "gates.gating.sluice.dev", metav1.DeleteOptions{}))
	wait("gates missing", func() bool { return len(kinds.Missing(gates)) == 1 })
	assert.False(t, kinds.Synced(gates))
	wait("told that gates went", func() bool { return changes.Load() > before })
}

// records keeps what a logger was told.
type records struct {
	mu    sync.Mutex
	lines []string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	line := rec.Level.String() + " " + rec.Message
	rec.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, line)
	return nil
}

func (r *records) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lines)
}

// The log says once, when the CRDs are listed, which are missing, in the caller's words; then
// one line per CRD installed or removed, and nothing for those installed at start.
func TestKindsLogMissingCRDsOnceThenEachChange(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	client := metadatafake.NewSimpleMetadataClient(scheme, crd("gates.gating.sluice.dev"))
	gates := schema.GroupResource{Group: "gating.sluice.dev", Resource: "gates"}
	widgets := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	gadgets := schema.GroupResource{Group: "example.com", Resource: "gadgets"}
	kinds, err := crdwatch.NewKinds(client)
	require.NoError(t, err)
	for _, gr := range []schema.GroupResource{gates, widgets, gadgets} {
		kinds.Add(gr, metadatainformer.NewFilteredMetadataInformer(client, gr.WithVersion("v1"), "", 0, cache.Indexers{}, nil).Informer())
	}
	log := &records{}
	kinds.Log(slog.New(log), func(missing []schema.GroupResource) string {
		return fmt.Sprintf("%v: install the example chart", missing)
	})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = kinds.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	logged := func(what string, n int) []string {
		t.Helper()
		require.NoError(t, testenv.Wait(ctx, 10*time.Second, func(context.Context) (bool, error) { return len(log.all()) >= n, nil }),
			"%s; logged %q", what, log.all())
		return log.all()
	}

	lines := logged("the missing CRDs", 1)
	assert.Equal(t, []string{"WARN CRDs of other charts are not installed; what needs them waits, and says so in its status " +
		"missing=[gadgets.example.com widgets.example.com]: install the example chart"}, lines)

	require.NoError(t, client.Tracker().Add(crd("widgets.example.com")))
	lines = logged("the CRD installed", 2)
	assert.Equal(t, "INFO CRD installed; reading its kind resource=widgets.example.com", lines[1])

	require.NoError(t, client.Resource(crdwatch.Resource).Delete(ctx, "gates.gating.sluice.dev", metav1.DeleteOptions{}))
	lines = logged("the CRD removed", 3)
	assert.Equal(t, "WARN CRD removed; what needs its kind waits, and says so in its status "+
		"missing=[gates.gating.sluice.dev]: install the example chart", lines[2])
	assert.Len(t, lines, 3, "one line per change")
}
