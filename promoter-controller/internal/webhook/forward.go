package webhook

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
)

// A replica that does not lead has no running reconcilers, and the SCMs do not redeliver, so it
// passes a verified delivery on to the leader through the API server: it sets the strategy's
// refresh annotation to a new value, which the leader's informer sees as an update and
// re-queues, as it does for a person's refresh.
//
// Writes are bounded per strategy: at most one patch per forwardWindow from a replica. A
// delivery arriving while a patch is waiting for its turn joins that patch instead of sending
// its own, and is answered once it is in. Skipping a patch because one was sent recently would
// lose a push that lands after the leader's fetch for the earlier one; joining a patch not sent
// yet cannot, since the reconcile it causes fetches after the delivery arrived.
const forwardWindow = time.Second

// forwardTimeout bounds one patch; an SCM gives up on a delivery after about 10 s.
const forwardTimeout = 5 * time.Second

type forwarder struct {
	mu    sync.Mutex
	slots map[string]*forwardSlot
}

// forwardSlot is one strategy's turn: when its last patch was sent, and the patch deliveries
// now wait for, if one is waiting for its turn.
type forwardSlot struct {
	lastSent time.Time
	next     *forwardPatch
}

type forwardPatch struct {
	done chan struct{}
	err  error
}

// forward sets the refresh annotation of the strategies keys ("namespace/name") and returns
// once, for each, a patch sent after the call began was accepted, or the first error.
func (p *Receiver) forward(ctx context.Context, keys []string) error {
	patches := make([]*forwardPatch, 0, len(keys))
	for _, key := range keys {
		patches = append(patches, p.nextPatch(key))
	}
	for _, patch := range patches {
		select {
		case <-patch.done:
			if patch.err != nil {
				return patch.err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// nextPatch returns the patch of key not sent yet, scheduling one at key's next turn if none is.
func (p *Receiver) nextPatch(key string) *forwardPatch {
	f := &p.forwards
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.slots == nil {
		f.slots = map[string]*forwardSlot{}
	}
	slot := f.slots[key]
	if slot == nil {
		slot = &forwardSlot{}
		f.slots[key] = slot
	}
	if slot.next == nil {
		slot.next = &forwardPatch{done: make(chan struct{})}
		wait := time.Until(slot.lastSent.Add(forwardWindow))
		go p.sendPatch(key, slot, slot.next, wait)
	}
	return slot.next
}

// sendPatch sends patch after wait; deliveries arriving meanwhile join it. The slot is dropped a
// window after the patch, unless another delivery came, so deleted strategies leave nothing.
func (p *Receiver) sendPatch(key string, slot *forwardSlot, patch *forwardPatch, wait time.Duration) {
	if wait > 0 {
		time.Sleep(wait)
	}
	f := &p.forwards
	f.mu.Lock()
	slot.next = nil
	slot.lastSent = time.Now()
	sent := slot.lastSent
	f.mu.Unlock()

	patch.err = p.patchRefresh(key, sent)
	close(patch.done)
	if patch.err != nil && p.Log != nil {
		p.Log.Error("cannot pass a webhook delivery on to the leader", "promotionstrategy", key, "error", patch.err)
	}
	time.AfterFunc(forwardWindow, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.slots[key] == slot && slot.next == nil {
			delete(f.slots, key)
		}
	})
}

// patchRefresh sets the refresh annotation of key to at, in RFC 3339 with nanoseconds, so each
// patch changes it. A strategy deleted meanwhile needs no refresh.
func (p *Receiver) patchRefresh(key string, at time.Time) error {
	ns, name, _ := strings.Cut(key, "/")
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		promoterv1alpha1.RefreshAnnotation: at.UTC().Format(time.RFC3339Nano),
	}}})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), forwardTimeout)
	defer cancel()
	_, err = p.Client.PromoterV1alpha1().PromotionStrategies(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
