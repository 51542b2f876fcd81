package commitstatus

import (
	"context"
	"errors"

	"github.com/sluicehq/sluice/pkg/runtime/controller"
)

// apply carries out p: the SCM call when p sends (settled by decide's rules on the answer), then
// the status write, the memo and the outcome count.
func (r *Reconciler) apply(ctx context.Context, o observation, p plan) (controller.Result, error) {
	if p.act == actSend {
		p = r.send(ctx, o, p)
	}
	r.count(p.outcome)
	if p.act == actNothing {
		return p.result, p.err
	}
	next := o.next.DeepCopy()
	next.Status = p.status
	written, err := r.write(ctx, o.cs, next)
	if err != nil {
		if p.joinErr {
			return controller.Result{}, errors.Join(p.err, err)
		}
		return controller.Result{}, err
	}
	if p.rememberFailure != "" {
		r.memo.recordFailure(o.key, p.rememberFailure, o.cs.ResourceVersion, written.ResourceVersion)
	}
	if p.rateLimitedFor > 0 {
		r.Log.Debug("rate limited; requeued", "key", o.key, "after", p.rateLimitedFor)
	}
	return p.result, p.err
}

// send makes the one SCM call of a reconcile. An accepted status is remembered at once: the
// status write that records it may yet fail.
func (r *Reconciler) send(ctx context.Context, o observation, p plan) plan {
	callCtx := ctx
	if r.CallTimeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, r.CallTimeout)
		defer cancel()
	}
	out, err := o.target.Provider.SetCommitStatus(callCtx, o.target.Repository, p.send)
	p = settle(o, p, out, r.now(), err)
	if err == nil {
		r.memo.recordSent(o.key, p.sending)
	}
	return p
}
