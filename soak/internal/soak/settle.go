package soak

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/pkg/conditions"
)

// restWindow is how long the soak watches the controllers at rest once everything converged.
const restWindow = 30 * time.Second

// maxCallsPerReplicaAtRest bounds the API requests of a replica at rest: leader election
// renews or polls its Lease every 2 s; a hot loop makes tens a second.
const maxCallsPerReplicaAtRest = 2.0

// recovered waits until every controller has a leader that renewed its Lease after the fault
// ended, and returns how long that took.
func (r *soakRun) recovered(ctx context.Context, since time.Time) (time.Duration, bool) {
	deadline := since.Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		leases, err := r.env.Kube.CoordinationV1().Leases("sluice-soak").List(ctx, metav1.ListOptions{})
		if err == nil {
			fresh := 0
			for _, l := range leases.Items {
				if l.Spec.RenewTime != nil && l.Spec.RenewTime.After(since) {
					fresh++
				}
			}
			if fresh >= len(controllers) {
				return time.Since(since), true
			}
		}
		if sleep(ctx, 500*time.Millisecond) != nil {
			return 0, false
		}
	}
	return 0, false
}

// settle ends the workload with one healthy fix forward per strategy, waits for everything to
// converge (invariant 9), watches the controllers at rest, and checks the histories once more.
func (r *soakRun) settle(ctx context.Context) error {
	r.say("faults over; one healthy fix forward per strategy, then convergence within %s", r.cfg.ConvergeWithin)
	if err := r.release(ctx); err != nil {
		return err
	}
	final := map[string]string{}
	r.w.mu.Lock()
	r.w.healthyFrom = r.w.nextSeq + 1
	r.w.mu.Unlock()
	for _, rl := range r.w.releases {
		if err := r.lastRelease(ctx, rl); err != nil {
			return err
		}
	}
	for _, s := range r.w.strategy {
		dry, err := r.fixForward(ctx, s)
		if err != nil {
			return err
		}
		final[s.name] = dry
	}
	start := time.Now()
	converged := false
	for time.Since(start) < r.cfg.ConvergeWithin {
		_ = r.w.reportHealth(ctx)
		r.fleet.sampleAll(ctx)
		if ok, _ := r.converged(ctx, final); ok {
			converged = true
			break
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
	r.check.count(9, 1)
	r.report.ConvergedIn = time.Since(start)
	if !converged {
		_, why := r.converged(ctx, final)
		r.check.violate(Violation{9, "all", fmt.Sprintf("not converged within %s: %s", r.cfg.ConvergeWithin, why)})
	}
	if err := r.statusesReachedTheSCM(ctx); err != nil {
		return err
	}
	if err := r.atRest(ctx); err != nil {
		return err
	}
	return r.check.histories()
}

// release opens every gate and resumes every strategy, retrying through the last faults'
// after-effects: the people's undos may have failed against a restarting API server.
func (r *soakRun) release(ctx context.Context) error {
	for _, s := range r.w.strategy {
		for attempt := 0; ; attempt++ {
			err := errors.Join(r.w.setGate(ctx, s.name, false), r.w.setSuspended(ctx, s.name, ""))
			if err == nil {
				break
			}
			if attempt == 30 {
				return fmt.Errorf("open the gate of %s and resume it: %w", s.name, err)
			}
			if err := sleep(ctx, 2*time.Second); err != nil {
				return err
			}
		}
	}
	return nil
}

// fixForward makes a dry commit the health rule never fails, and proposes it everywhere.
func (r *soakRun) fixForward(ctx context.Context, s *strategy) (string, error) {
	var err error
	for attempt := 0; attempt < 10; attempt++ {
		var dry string
		if dry, err = r.w.hydrate(ctx, s); err == nil {
			return dry, nil
		}
		if sleep(ctx, 2*time.Second) != nil {
			break
		}
	}
	return "", fmt.Errorf("fix forward of %s: %w", s.name, err)
}

// converged: every environment runs its strategy's final dry commit, every strategy is Ready
// for its current generation, and no controller's queue holds work.
func (r *soakRun) converged(ctx context.Context, final map[string]string) (bool, string) {
	list, err := r.w.sluice.PromoterV1alpha1().PromotionStrategies(r.w.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	for _, ps := range list.Items {
		ready := conditions.Get(ps.Status.Conditions, conditions.Ready)
		if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != ps.Generation {
			return false, fmt.Sprintf("%s is not Ready: %v%s", ps.Name, ready, r.pullRequestsOf(ctx, ps.Name))
		}
		for _, e := range ps.Status.Environments {
			if e.Blocked != "" {
				return false, fmt.Sprintf("%s/%s is blocked: %s", ps.Name, e.Branch, e.Blocked)
			}
			if e.Active.DrySHA != final[ps.Name] {
				return false, fmt.Sprintf("%s/%s runs %s, not the final %s", ps.Name, e.Branch, short(e.Active.DrySHA), short(final[ps.Name]))
			}
		}
	}
	for _, s := range r.w.strategy {
		if !s.flux {
			continue
		}
		if dry, err := r.check.appliedDry(ctx, s.name); err != nil || dry != final[s.name] {
			return false, fmt.Sprintf("Flux has %s/prod at %s, not the final %s (%v)", s.name, short(dry), short(final[s.name]), err)
		}
	}
	if ok, why := r.releasesConverged(ctx); !ok {
		return false, why
	}
	depth, _, err := r.fleet.totals(ctx)
	if err != nil {
		return false, err.Error()
	}
	if depth > 0 {
		return false, fmt.Sprintf("%g items still queued", depth)
	}
	return true, ""
}

// pullRequestsOf names the strategy's pull requests not settled, with the conditions that say
// why: what the SCM answered is what a person would look at first.
func (r *soakRun) pullRequestsOf(ctx context.Context, strategy string) string {
	list, err := r.w.sluice.PromoterV1alpha1().PullRequests(r.w.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "; pull requests: " + err.Error()
	}
	var out strings.Builder
	for _, pr := range list.Items {
		if !strings.HasPrefix(pr.Name, strategy+"-") || pr.Status.State == pr.Spec.State {
			continue
		}
		fmt.Fprintf(&out, "; pull request %s (#%s, %s, asked %s):", pr.Name, pr.Status.ID, pr.Status.State, pr.Spec.State)
		for _, c := range pr.Status.Conditions {
			fmt.Fprintf(&out, " %s=%s %s: %s (since %s)", c.Type, c.Status, c.Reason, c.Message, c.LastTransitionTime.UTC().Format(time.TimeOnly))
		}
		if r.gitea != nil && pr.Status.ID != "" {
			out.WriteString(r.gitea.describePull(ctx, strategy, pr.Status.ID))
		}
		out.WriteString(r.describeBranches(strategy, pr.Spec.TargetBranch, pr.Spec.SourceBranch))
	}
	return out.String()
}

// describeBranches says where git has target and source, and whether source holds target: a
// fast-forward merge needs it.
func (r *soakRun) describeBranches(strategy, target, source string) string {
	for _, s := range r.w.strategy {
		if s.name != strategy {
			continue
		}
		b := newBranchReader(s.dir)
		to, err := b.tip(target)
		if err != nil {
			return "; git: " + err.Error()
		}
		from, err := b.tip(source)
		if err != nil {
			return "; git: " + err.Error()
		}
		holds, err := b.isAncestor(to, from)
		return fmt.Sprintf("; git: %s@%s, %s@%s, %s holds %s: %t (%v)", target, short(to), source, short(from), source, target, holds, err)
	}
	return ""
}

// atRest counts the API requests and git requests over restWindow with nothing to do: a hot
// loop shows there (invariant 9).
func (r *soakRun) atRest(ctx context.Context) error {
	r.check.count(9, 2)
	_, before, err := r.fleet.totals(ctx)
	if err != nil {
		r.check.violate(Violation{9, "all", "at rest: " + err.Error()})
		return nil
	}
	gitBefore, restStart := r.scmRequests(), time.Now()
	if err := sleep(ctx, restWindow); err != nil {
		return err
	}
	_, after, err := r.fleet.totals(ctx)
	if err != nil {
		r.check.violate(Violation{9, "all", "at rest: " + err.Error()})
		return nil
	}
	r.report.APICallsPerSecondAtRest = (after - before) / restWindow.Seconds()
	r.report.GitRequestsAtRest = r.scmRequests() - gitBefore
	if limit := maxCallsPerReplicaAtRest * float64(len(r.fleet.replicas)); r.report.APICallsPerSecondAtRest > limit {
		r.check.violate(Violation{9, "all", fmt.Sprintf("%.1f API requests a second at rest, more than %.0f", r.report.APICallsPerSecondAtRest, limit)})
	}
	if r.report.GitRequestsAtRest > 0 {
		last := r.in.git.lastSince(restStart, 5)
		if r.in.gitea != nil {
			last = append(last, r.in.gitea.lastSince(restStart, 5)...)
		}
		r.check.violate(Violation{9, "all", fmt.Sprintf("%d git and SCM requests in %s at rest; the last: %s",
			r.report.GitRequestsAtRest, restWindow, strings.Join(last, "; "))})
	}
	return nil
}

// scmRequests counts the requests the git server and Gitea have had through their proxies.
func (r *soakRun) scmRequests() int64 {
	n := r.in.git.requests.Load()
	if r.in.gitea != nil {
		n += r.in.gitea.requests.Load()
	}
	return n
}

// lastRelease upgrades a release once more to a version whose tests pass, retrying through the
// last faults' after-effects.
func (r *soakRun) lastRelease(ctx context.Context, rl *release) error {
	var err error
	for attempt := 0; attempt < 10; attempt++ {
		if err = r.w.upgradeRelease(ctx, rl, true); err == nil {
			return nil
		}
		if sleep(ctx, 2*time.Second) != nil {
			break
		}
	}
	return fmt.Errorf("last upgrade of %s: %w", rl.name, err)
}
