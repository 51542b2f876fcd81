package manager_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/testenv"
)

// A sharded process (--watch-label-selector) sees through ReferenceInformers the objects that
// carry no shard label, and has them in cache before it leads: here it stands by behind a Lease
// someone else holds.
func TestReferenceInformersIgnoreTheShardSelector(t *testing.T) {
	testenv.SkipIfShort(t)
	ns := newNamespace(t)
	createGate(t, ns, "shared", nil)
	createGate(t, ns, "mine", func(g *gatingv1alpha1.Gate) { g.Labels = map[string]string{"shard": "a"} })
	_, err := env.Kube.CoreV1().ConfigMaps(ns).Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared-config"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	lease := holdLease(t, "someone-else")

	opts := options.Defaults("references-test")
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
	opts.Namespace = ns
	opts.WatchLabelSelector = "shard=a"
	opts.LeaderElect, opts.LeaderElectionNamespace, opts.LeaderElectionID = true, "default", lease
	m, err := manager.New("references-test", opts, env.Config, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	gates := m.SluiceInformers.Gating().V1alpha1().Gates()
	refGates := m.ReferenceInformers.Sluice.Gating().V1alpha1().Gates()
	refConfigMaps := m.ReferenceInformers.Kube.Core().V1().ConfigMaps()
	// Requested before Run, as a controller's setup does, so Run starts them and waits for them.
	gates.Informer()
	refGates.Informer()
	refConfigMaps.Informer()
	testenv.RunManager(t, m)
	testenv.WaitFor(t, 20*time.Second, func() (bool, error) { return m.Probes.Ready(), nil }, "caches synced")
	assert.False(t, m.Leading(), "a standby: the Lease is someone else's")
	// Every cache has listed once, so what is missing from one is not merely late.
	_, err = gates.Lister().Gates(ns).Get("shared")
	assert.True(t, apierrors.IsNotFound(err), "the main factory keeps the shard's objects only: %v", err)
	_, err = gates.Lister().Gates(ns).Get("mine")
	assert.NoError(t, err)
	for _, name := range []string{"shared", "mine"} {
		_, err = refGates.Lister().Gates(ns).Get(name)
		assert.NoError(t, err, "references see %s", name)
	}
	_, err = refConfigMaps.Lister().ConfigMaps(ns).Get("shared-config")
	assert.NoError(t, err)

	createGate(t, ns, "later", nil)
	testenv.WaitFor(t, 20*time.Second, func() (bool, error) {
		_, err := refGates.Lister().Gates(ns).Get("later")
		return err == nil, err
	}, "references watch as well as list")
}

// The main and reference factories are one and the same without a selector: nothing is watched
// twice.
func TestReferenceInformersAreTheMainOnesWithoutASelector(t *testing.T) {
	testenv.SkipIfShort(t)
	opts := options.Defaults("references-unsharded")
	m, err := manager.New("references-unsharded", opts, env.Config, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	assert.Same(t, m.SluiceInformers.Gating().V1alpha1().Gates().Informer(),
		m.ReferenceInformers.Sluice.Gating().V1alpha1().Gates().Informer())
}

// holdLease creates a Lease held by holder for an hour, and returns its name.
func holdLease(t *testing.T, holder string) string {
	t.Helper()
	name := fmt.Sprintf("held-%d", time.Now().UnixNano())
	now := metav1.NewMicroTime(time.Now())
	_, err := env.Kube.CoordinationV1().Leases("default").Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return name
}
