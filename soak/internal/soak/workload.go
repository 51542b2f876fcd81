package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	commitstatusv1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	promoterv1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// environments of every strategy, in order; prod is gated and has a RollbackPolicy.
var environments = []string{"dev", "staging", "prod"}

var resources = map[string]schema.GroupVersionResource{
	"ScmProvider":       {Group: "scm.sluice.dev", Version: "v1alpha1", Resource: "scmproviders"},
	"ScmRepository":     {Group: "scm.sluice.dev", Version: "v1alpha1", Resource: "scmrepositories"},
	"Gate":              {Group: "gating.sluice.dev", Version: "v1alpha1", Resource: "gates"},
	"PromotionStrategy": {Group: "promoter.sluice.dev", Version: "v1alpha1", Resource: "promotionstrategies"},
	"RollbackPolicy":    {Group: "rollback.sluice.dev", Version: "v1alpha1", Resource: "rollbackpolicies"},
	"RevertCommit":      {Group: "rollback.sluice.dev", Version: "v1alpha1", Resource: "revertcommits"},
}

// create makes the object of a YAML document in namespace ns.
func create(ctx context.Context, dyn dynamic.Interface, ns, doc string) error {
	var u unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		return fmt.Errorf("%w in %s", err, doc)
	}
	gvr, ok := resources[u.GetKind()]
	if !ok {
		return fmt.Errorf("the soak does not create %s", u.GetKind())
	}
	_, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, &u, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// ops counts what the workload did.
type ops struct {
	dryCommits, proposals, statuses, gateCloses, gateOpens, suspends, resumes, manualReverts, failed atomic.Int64
}

// strategy is one PromotionStrategy of the workload and its repository.
type strategy struct {
	name string
	repo *git.Repository
	dir  string
}

// workload drives the strategies: a hydrator, health, and people.
type workload struct {
	ns     string
	seed   uint64
	sluice sluice.Interface
	dyn    dynamic.Interface
	ops    *ops

	mu      sync.Mutex
	seq     map[string]int // dry SHA -> order made
	nextSeq int
	// healthyFrom: the dry commits from this one on never fail (the final fix forward); 0 for none.
	healthyFrom int
	written     map[string]bool // hydrated SHAs that have a health status
	gates       map[string]*gateLog
	strategy    []*strategy
}

// failing is the seeded rule of which dry commits fail their health in prod.
func (w *workload) failing(seq int) bool {
	w.mu.Lock()
	healthy := w.healthyFrom > 0 && seq >= w.healthyFrom
	w.mu.Unlock()
	return !healthy && rand.New(rand.NewPCG(w.seed, uint64(seq))).IntN(4) == 0
}

func (w *workload) setUp(ctx context.Context, s *strategy, url string) error {
	h := &hydrator{repo: s.repo}
	d0, err := h.dryCommit(ctx, "0")
	if err != nil {
		return err
	}
	for _, env := range environments {
		if _, err := h.commit(ctx, env, d0, env+": 0"); err != nil {
			return err
		}
	}
	docs := []string{
		fmt.Sprintf(`{apiVersion: scm.sluice.dev/v1alpha1, kind: ScmRepository, metadata: {name: %s}, spec: {url: %q, allowInsecureLoopbackHTTP: true, providerRef: {name: plain-git}, owner: soak, name: %s}}`, s.name, url, s.name),
		fmt.Sprintf(`{apiVersion: gating.sluice.dev/v1alpha1, kind: Gate, metadata: {name: %s-prod}, spec: {closed: false}}`, s.name),
		fmt.Sprintf(`{apiVersion: promoter.sluice.dev/v1alpha1, kind: PromotionStrategy, metadata: {name: %s}, spec: {repositoryRef: {name: %s}, dryBranch: main, activeCommitStatuses: [{key: health}],
		  environments: [{branch: dev}, {branch: staging}, {branch: prod, gates: {refs: [{name: %s-prod}]}}]}}`, s.name, s.name, s.name),
		fmt.Sprintf(`{apiVersion: rollback.sluice.dev/v1alpha1, kind: RollbackPolicy, metadata: {name: %s-prod}, spec: {promotionStrategyRef: {name: %s}, environments: [prod],
		  trigger: {commitStatuses: [{key: health}], failureThreshold: 5s, window: 1h}, cooldown: 30s, autoMerge: true}}`, s.name, s.name),
	}
	for _, d := range docs {
		if err := create(ctx, w.dyn, w.ns, d); err != nil {
			return err
		}
	}
	return nil
}

// hydrate makes one dry commit on s and proposes it to every environment.
func (w *workload) hydrate(ctx context.Context, s *strategy) (string, error) {
	w.mu.Lock()
	w.nextSeq++
	seq := w.nextSeq
	w.mu.Unlock()
	h := &hydrator{repo: s.repo}
	dry, err := h.dryCommit(ctx, fmt.Sprint(seq))
	if err != nil {
		return "", err
	}
	w.mu.Lock()
	w.seq[dry] = seq
	w.mu.Unlock()
	w.ops.dryCommits.Add(1)
	for _, env := range environments {
		if err := h.propose(ctx, env, dry, fmt.Sprintf("%s: %d", env, seq)); err != nil {
			return dry, err
		}
		w.ops.proposals.Add(1)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, promoterv1.RefreshAnnotation, dry[:12])
	_, err = w.sluice.PromoterV1alpha1().PromotionStrategies(w.ns).Patch(ctx, s.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return dry, err
}

// seqs is a copy of the dry commits' order, for the history checks.
func (w *workload) seqs() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.seq))
	for k, v := range w.seq {
		out[k] = v
	}
	return out
}

// reportHealth writes a health CommitStatus for every active commit that has none: success,
// but failure in prod for the dry commits the seeded rule picks.
func (w *workload) reportHealth(ctx context.Context) error {
	list, err := w.sluice.PromoterV1alpha1().PromotionStrategies(w.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, ps := range list.Items {
		for _, e := range ps.Status.Environments {
			sha, dry := e.Active.HydratedSHA, e.Active.DrySHA
			w.mu.Lock()
			done, seq := w.written[sha], w.seq[dry]
			w.mu.Unlock()
			if sha == "" || done {
				continue
			}
			phase, desc := commitstatusv1.CommitStatusSuccess, "rollout healthy"
			if e.Branch == "prod" && seq > 0 && w.failing(seq) {
				phase, desc = commitstatusv1.CommitStatusFailure, "pods fail readiness"
			}
			_, err := w.sluice.CommitstatusV1alpha1().CommitStatuses(w.ns).Create(ctx, &commitstatusv1.CommitStatus{
				ObjectMeta: metav1.ObjectMeta{Name: "health-" + sha[:12], Labels: map[string]string{commitstatusv1.KeyLabel: "health"}},
				Spec: commitstatusv1.CommitStatusSpec{RepositoryRef: commitstatusv1.RepositoryReference{Name: ps.Spec.RepositoryRef.Name},
					SHA: sha, Name: "health", Phase: phase, Description: desc},
			}, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
			w.ops.statuses.Add(1)
			w.mu.Lock()
			w.written[sha] = true
			w.mu.Unlock()
		}
	}
	return nil
}

// person does one thing a release engineer does, drawn by rng, and undoes it later.
func (w *workload) person(ctx context.Context, rng *rand.Rand, undo func(time.Duration, func())) error {
	s := w.strategy[rng.IntN(len(w.strategy))]
	switch rng.IntN(4) {
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

func (w *workload) failedIf(err error) {
	if err != nil {
		w.ops.failed.Add(1)
	}
}

func (w *workload) setGate(ctx context.Context, name string, closed bool) error {
	patch := fmt.Sprintf(`{"spec":{"closed":%t,"message":"soak: a person"}}`, closed)
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

// manualRevert asks, as a person would, to take env back to its last healthy dry commit.
func (w *workload) manualRevert(ctx context.Context, name, env string) error {
	w.mu.Lock()
	w.nextSeq++
	id := w.nextSeq
	w.mu.Unlock()
	err := create(ctx, w.dyn, w.ns, fmt.Sprintf(`{apiVersion: rollback.sluice.dev/v1alpha1, kind: RevertCommit, metadata: {name: %s-%s-by-hand-%d},
	  spec: {promotionStrategyRef: {name: %s}, activeBranch: %s, reason: "soak: a person reverts by hand", autoMerge: true}}`, name, env, id, name, env))
	if err == nil {
		w.ops.manualReverts.Add(1)
	}
	return err
}

func (w *workload) gateOf(name string) *gateLog {
	w.mu.Lock()
	defer w.mu.Unlock()
	g, ok := w.gates[name]
	if !ok {
		g = &gateLog{}
		w.gates[name] = g
	}
	return g
}

// hydrator writes dry commits and renders them onto the environments' -next branches, with
// the hydrator metadata and note the promoter reads.
type hydrator struct{ repo *git.Repository }

func (h *hydrator) dryCommit(ctx context.Context, version string) (string, error) {
	_ = h.repo.Fetch(ctx, "main")
	return h.repo.CommitFiles(ctx, git.CommitRequest{
		Branch: "main", Message: "app " + version,
		Files: map[string][]byte{"apps/app/values.yaml": []byte("version: " + version + "\n")},
	})
}

func (h *hydrator) commit(ctx context.Context, branch, dry, msg string) (string, error) {
	_ = h.repo.Fetch(ctx, branch)
	return h.repo.CommitFiles(ctx, git.CommitRequest{
		Branch: branch, Message: msg,
		Files: map[string][]byte{"app.yaml": []byte("# " + msg + "\n"), git.DefaultMetadataFile: git.HydratorNote(dry)},
	})
}

func (h *hydrator) propose(ctx context.Context, env, dry, msg string) error {
	next := env + "-next"
	// A -next branch left from an earlier proposal gets the new one on top, as a hydrator
	// pushes; a first proposal starts from the environment.
	if err := h.repo.Fetch(ctx, env, next); err != nil {
		var missing *git.BranchNotFoundError
		if !errors.As(err, &missing) {
			return err
		}
	}
	if _, err := h.repo.Resolve(next); err != nil {
		tip, err := h.repo.Resolve(env)
		if err != nil {
			return err
		}
		if err := h.repo.CreateBranch(ctx, next, tip); err != nil {
			return err
		}
	}
	sha, err := h.repo.CommitFiles(ctx, git.CommitRequest{
		Branch: next, Message: msg,
		Files: map[string][]byte{"app.yaml": []byte("# " + msg + "\n"), git.DefaultMetadataFile: git.HydratorNote(dry)},
	})
	if err != nil {
		return err
	}
	return h.repo.AddNote(ctx, sha, git.HydratorNote(dry), git.Identity{Name: "hydrator", Email: "hydrator@example.com"})
}
