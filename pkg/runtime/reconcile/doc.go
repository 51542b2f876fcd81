// Package reconcile holds what every reconciler does the same way around its own decisions:
// load the object a key names (Load), and write its status back (StatusWriter).
//
//	l, found, err := reconcile.Load(key, getGate, gateSuspended)
//	if !found || err != nil {
//		return controller.Result{}, err
//	}
//	if l.ReportSuspend(&l.Next.Status.Conditions) {
//		_, _, err := gateStatus.Write(ctx, client.Gates(l.Next.Namespace), l.Cached, l.Next)
//		return controller.Result{}, err
//	}
//	... observe, decide, and change l.Next.Status ...
//	written, changed, err := gateStatus.Write(ctx, client.Gates(l.Next.Namespace), l.Cached, l.Next)
//
// Time comes from a k8s.io/utils/clock.PassiveClock field of the reconciler (the manager's Clock
// in a process, a fake clock in a test), never from time.Now directly.
package reconcile
