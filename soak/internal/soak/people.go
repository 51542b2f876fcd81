package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// person does one thing a release engineer does, drawn by rng, and undoes it later.
func (w *workload) person(ctx context.Context, rng *rand.Rand, undo func(time.Duration, func())) error {
	s := w.strategy[rng.IntN(len(w.strategy))]
	switch rng.IntN(6) {
	case 4:
		return w.approve(ctx, s.name)
	case 5:
		return w.fixForwardDuringRevert(ctx, rng)
	case 0, 1:
		g := w.gateOf(s.name)
		if !g.open() {
			return nil
		}
		if err := w.setGate(ctx, s.name, true); err != nil {
			return err
		}
		undo(time.Duration(10+rng.IntN(30))*time.Second, func() { w.failedIf(w.setGate(context.WithoutCancel(ctx), s.name, false)) })
	case 2:
		if err := w.setSuspended(ctx, s.name, "soak: a person pauses promotions"); err != nil {
			return err
		}
		w.ops.suspends.Add(1)
		undo(time.Duration(5+rng.IntN(15))*time.Second, func() { w.failedIf(w.setSuspended(context.WithoutCancel(ctx), s.name, "")) })
	case 3:
		return w.manualRevert(ctx, s.name, "staging")
	}
	return nil
}

// approve lets the strategy's newest dry commit through its closed prod gate, as a person
// signs off one revision during a freeze; the gate's approvals are cleared when it opens again.
func (w *workload) approve(ctx context.Context, name string) error {
	g := w.gateOf(name)
	if g.open() {
		return nil
	}
	w.mu.Lock()
	newest, seq := "", 0
	for dry, n := range w.seq {
		if n > seq && w.repoOf[dry] == name {
			newest, seq = dry, n
		}
	}
	w.mu.Unlock()
	if newest == "" {
		return nil
	}
	// Recorded before the write, so a merge of it observed after the write is never flagged.
	g.approve(newest)
	patch := fmt.Sprintf(`{"spec":{"approvals":[{"revision":%q,"by":"soak","message":"soak: a person approves"}]}}`, newest)
	if _, err := w.sluice.GatingV1alpha1().Gates(w.ns).Patch(ctx, name+"-prod", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return err
	}
	w.ops.approvals.Add(1)
	return nil
}

// fixForwardDuringRevert pushes a healthy dry commit to a strategy whose prod revert is in
// flight, as a person who fixes forward instead of waiting: the revert must not overwrite it.
func (w *workload) fixForwardDuringRevert(ctx context.Context, rng *rand.Rand) error {
	list, err := w.sluice.RollbackV1alpha1().RevertCommits(w.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var inFlight []string
	for _, rc := range list.Items {
		p := rc.Status.Phase
		if rc.Spec.ActiveBranch == "prod" && (p == "" || p == rollbackv1.RevertPending || p == rollbackv1.RevertOpen) {
			inFlight = append(inFlight, rc.Spec.PromotionStrategyRef.Name)
		}
	}
	if len(inFlight) == 0 {
		return nil
	}
	name := inFlight[rng.IntN(len(inFlight))]
	for _, s := range w.strategy {
		if s.name == name {
			if _, err := w.hydrateAs(ctx, s, true); err != nil {
				return err
			}
			w.ops.fixesDuringReverts.Add(1)
		}
	}
	return nil
}

func (w *workload) failedIf(err error) {
	if err != nil {
		w.ops.failed.Add(1)
	}
}

func (w *workload) setGate(ctx context.Context, name string, closed bool) error {
	// Opening clears the approvals given while it was closed: they were for that freeze.
	patch := fmt.Sprintf(`{"spec":{"closed":%t,"message":"soak: a person"}}`, closed)
	if !closed {
		patch = `{"spec":{"closed":false,"message":"soak: a person","approvals":null}}`
	}
	g := w.gateOf(name)
	if closed {
		// Recorded before the write, so a merge observed after it is never missed.
		g.close(time.Now())
	}
	_, err := w.sluice.GatingV1alpha1().Gates(w.ns).Patch(ctx, name+"-prod", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err == nil && !closed {
		g.reopen(time.Now())
		w.ops.gateOpens.Add(1)
	}
	if err == nil && closed {
		w.ops.gateCloses.Add(1)
	}
	if err != nil && closed {
		g.reopen(time.Now())
	}
	return err
}

func (w *workload) setSuspended(ctx context.Context, name, reason string) error {
	value := "null"
	if reason != "" {
		value = fmt.Sprintf("%q", reason)
	} else {
		w.ops.resumes.Add(1)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, suspend.Annotation, value)
	_, err := w.sluice.PromoterV1alpha1().PromotionStrategies(w.ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// manualRevert asks, as a person would, to take env back to its last healthy dry commit. The
// person names the dry commit they saw running (badDrySHA), so a fix forward that lands before
// the revert is written is not undone: the revert ends instead (invariant 3).
func (w *workload) manualRevert(ctx context.Context, name, env string) error {
	ps, err := w.sluice.PromoterV1alpha1().PromotionStrategies(w.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	bad := ""
	for _, e := range ps.Status.Environments {
		if e.Branch == env {
			bad = e.Active.DrySHA
		}
	}
	if bad == "" {
		return nil
	}
	w.mu.Lock()
	w.nextSeq++
	id := w.nextSeq
	w.mu.Unlock()
	err = create(ctx, w.dyn, w.ns, fmt.Sprintf(`{apiVersion: rollback.sluice.dev/v1alpha1, kind: RevertCommit, metadata: {name: %s-%s-by-hand-%d},
	  spec: {promotionStrategyRef: {name: %s}, activeBranch: %s, badDrySHA: %s, reason: "soak: a person reverts by hand", autoMerge: true}}`, name, env, id, name, env, bad))
	if err == nil {
		w.ops.manualReverts.Add(1)
	}
	return err
}
