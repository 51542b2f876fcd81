package soak

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/testenv/flux"
)

// fluxGrace is how long after a gate closes Flux may still apply: the gate-controller puts its
// hold on the Kustomization after it sees the gate, and when its leader was just killed, a
// standby takes the Lease first (8 s) and the API server may be restarting. The promoter's merges
// get gateGrace; the cluster's objects, one step further, this.
const fluxGrace = 30 * time.Second

// fluxInterval is how often source-controller fetches and kustomize-controller applies.
const fluxInterval = 10 * time.Second

// onFlux: one strategy in four, on the plain git server, has its prod branch deployed by the
// real Flux controllers; with fewer than four strategies, the first one does (from two on).
func onFlux(i, strategies int) bool {
	if strategies < 4 {
		return strategies >= 2 && i == 0
	}
	return i%4 == 1
}

// appConfigMap is the object every hydrated commit carries: the ConfigMap Flux applies, whose
// data.dry is the dry SHA the cluster runs.
func appConfigMap(strategy string) string { return strategy + "-app" }

// manifest is a hydrated commit's app.yaml: a real object Flux can apply.
func manifest(strategy, dry, msg string) []byte {
	return []byte(fmt.Sprintf("# %s\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  dry: %q\n  message: %q\n", msg, appConfigMap(strategy), dry, msg))
}

// startFlux runs source-controller and kustomize-controller on the soak's namespace, with the
// admin kubeconfig: they are the cluster's deployer, not a controller under test.
func (r *soakRun) startFlux(ctx context.Context) error {
	c, err := flux.Run(ctx, r.env.Kube, r.env.Kubeconfig, flux.Options{Namespace: r.w.ns}, filepath.Join(r.cfg.LogDir, "flux"))
	r.flux = c
	if err != nil {
		return fmt.Errorf("start the Flux controllers: %w", err)
	}
	return nil
}

// deployWithFlux makes the GitRepository and the Kustomization that deploy s's prod branch, the
// Kustomization held by s's prod gate. source-controller fetches from its own server, not through
// the fault proxy: its polling is Flux's, not a Sluice controller's SCM call at rest.
func (r *soakRun) deployWithFlux(ctx context.Context, s *strategy) error {
	// source-controller clones shallow, which the go-git server does not serve: git's own
	// http-backend serves it the same bare repository, read-only.
	directURL, stop, err := gittest.ServeWithGit(s.dir)
	if err != nil {
		return err
	}
	r.stops = append(r.stops, stop)
	name := s.name + "-prod"
	docs := []string{
		fmt.Sprintf(`{apiVersion: source.toolkit.fluxcd.io/v1, kind: GitRepository, metadata: {name: %s}, spec: {url: %q, interval: %s, timeout: 60s, ref: {branch: prod}}}`,
			name, directURL, fluxInterval),
		fmt.Sprintf(`{apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, metadata: {name: %s, annotations: {%q: %s}},
		  spec: {interval: %s, timeout: 60s, path: ./, prune: true, sourceRef: {kind: GitRepository, name: %s}, targetNamespace: %s}}`,
			name, gate.GatesAnnotation, name, fluxInterval, name, r.w.ns),
	}
	for _, d := range docs {
		if err := create(ctx, r.env.Dynamic, r.w.ns, d); err != nil {
			return err
		}
	}
	s.flux = true
	return nil
}

// appliedWatch follows the ConfigMap Flux applied for one strategy's prod.
type appliedWatch struct {
	strategy string
	dry      string
	seen     time.Time
}

// fluxChecks checks invariant 6 on the cluster: the ConfigMap Flux applies from prod never
// changes while prod's gate has been closed for longer than fluxGrace.
type fluxChecks struct {
	mu      sync.Mutex
	watches []*appliedWatch
}

func (c *checker) appliedDry(ctx context.Context, strategy string) (string, error) {
	cm, err := c.w.kube.CoreV1().ConfigMaps(c.w.ns).Get(ctx, appConfigMap(strategy), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return cm.Data["dry"], nil
}

// followApplied reads every Flux-deployed ConfigMap once.
func (c *checker) followApplied(ctx context.Context, now time.Time) error {
	c.flux.mu.Lock()
	defer c.flux.mu.Unlock()
	for _, aw := range c.flux.watches {
		dry, err := c.appliedDry(ctx, aw.strategy)
		if err != nil {
			return err
		}
		if dry == "" || dry == aw.dry {
			aw.seen = now
			continue
		}
		if aw.dry != "" {
			c.count(6, 1)
			if c.w.gateOf(aw.strategy).heldThroughout(aw.seen, now, fluxGrace) {
				c.violate(Violation{6, aw.strategy + "/prod (cluster)", fmt.Sprintf("Flux applied dry %s over %s while the gate was closed", short(dry), short(aw.dry))})
			}
		}
		c.events.add(fmt.Sprintf("%s/prod applied dry %s", aw.strategy, short(dry)))
		aw.dry, aw.seen = dry, now
	}
	return nil
}
