package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	commitstatusv1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	promoterv1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/testenv/flux"
)

// strategyPoll is the strategies' fallback poll of their repository (spec.interval, 5m by
// default). The hydrator asks for a refresh after each proposal, and every strategy fetches for
// the final fix forward, so with 10 minutes no poll falls due in the rest window of invariant 9:
// a git request there is one nothing asked for. With 5 minutes and 20 strategies, a strategy
// that settled early polled in it (run seed 202).
const strategyPoll = "10m"

// environments of every strategy, in order; prod is gated and has a RollbackPolicy.
var environments = []string{"dev", "staging", "prod"}

var resources = map[string]schema.GroupVersionResource{
	"ScmProvider":       {Group: "scm.sluice.dev", Version: "v1alpha1", Resource: "scmproviders"},
	"ScmRepository":     {Group: "scm.sluice.dev", Version: "v1alpha1", Resource: "scmrepositories"},
	"Gate":              {Group: "gating.sluice.dev", Version: "v1alpha1", Resource: "gates"},
	"PromotionStrategy": {Group: "promoter.sluice.dev", Version: "v1alpha1", Resource: "promotionstrategies"},
	"RollbackPolicy":    {Group: "rollback.sluice.dev", Version: "v1alpha1", Resource: "rollbackpolicies"},
	"RevertCommit":      {Group: "rollback.sluice.dev", Version: "v1alpha1", Resource: "revertcommits"},
	"GitRepository":     flux.GitRepositories,
	"Kustomization":     flux.Kustomizations,
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
	dryCommits, proposals, statuses, gateCloses, gateOpens, approvals, suspends, resumes, manualReverts, fixesDuringReverts, failed atomic.Int64
	releaseUpgrades, releaseFailingTests, releaseForeign                                                                            atomic.Int64
}

// strategy is one PromotionStrategy of the workload and its repository.
type strategy struct {
	name string
	repo *git.Repository
	// dir is the bare repository on the server's disk, which the checker reads.
	dir string
	// owner and provider: the repository's owner on its SCM and the ScmProvider (plain-git or
	// gitea).
	owner, provider string
	// flux: the real Flux controllers deploy its prod branch, held by its prod gate.
	flux bool
	// cli is set on Gitea (see hydrator.cli).
	cli *gitCLI
}

// workload drives the strategies: a hydrator, health, and people.
type workload struct {
	ns     string
	seed   uint64
	sluice sluice.Interface
	kube   kubernetes.Interface
	dyn    dynamic.Interface
	ops    *ops

	mu      sync.Mutex
	seq     map[string]int    // dry SHA -> order made
	repoOf  map[string]string // dry SHA -> its strategy
	nextSeq int
	// healthyFrom: the dry commits from this one on never fail (the final fix forward); 0 for none.
	healthyFrom int
	// fixes are the dry commits a person pushed as fixes forward during a revert: they never fail.
	fixes    map[int]bool
	written  map[string]int // hydrated SHA -> the stage of its health status
	gates    map[string]*gateLog
	strategy []*strategy
	releases []*release
}

// failing is the seeded rule of which dry commits fail their health in prod.
func (w *workload) failing(seq int) bool {
	w.mu.Lock()
	healthy := w.healthyFrom > 0 && seq >= w.healthyFrom || w.fixes[seq]
	w.mu.Unlock()
	return !healthy && rand.New(rand.NewPCG(w.seed, uint64(seq))).IntN(4) == 0
}

func (w *workload) setUp(ctx context.Context, s *strategy, url string) error {
	h := &hydrator{repo: s.repo, strategy: s.name, cli: s.cli}
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
		repositoryDoc(s, url),
		fmt.Sprintf(`{apiVersion: gating.sluice.dev/v1alpha1, kind: Gate, metadata: {name: %s-prod}, spec: {closed: false}}`, s.name),
		strategyDoc(s.name),
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

// strategyDoc is the PromotionStrategy of a strategy: dev, staging and prod, prod gated.
func strategyDoc(name string) string {
	return fmt.Sprintf(`{apiVersion: promoter.sluice.dev/v1alpha1, kind: PromotionStrategy, metadata: {name: %s}, spec: {repositoryRef: {name: %s}, dryBranch: main, interval: %s, activeCommitStatuses: [{key: health}],
		  environments: [{branch: dev}, {branch: staging}, {branch: prod, gates: {refs: [{name: %s-prod}]}}]}}`, name, name, strategyPoll, name)
}

// repositoryDoc is the ScmRepository of s; a Gitea one reads the provider's Secret for git.
func repositoryDoc(s *strategy, url string) string {
	auth := ""
	if s.provider == giteaProvider {
		auth = fmt.Sprintf(", auth: {type: basic, secretRef: {name: %s}}", giteaProvider)
	}
	return fmt.Sprintf(`{apiVersion: scm.sluice.dev/v1alpha1, kind: ScmRepository, metadata: {name: %s}, spec: {url: %q, allowInsecureLoopbackHTTP: true, providerRef: {name: %s}, owner: %s, name: %s%s}}`,
		s.name, url, s.provider, s.owner, s.name, auth)
}

// hydrate makes one dry commit on s and proposes it to every environment.
func (w *workload) hydrate(ctx context.Context, s *strategy) (string, error) {
	return w.hydrateAs(ctx, s, false)
}

// hydrateAs makes one dry commit on s, a fix forward the health rule never fails when fix is
// set, and proposes it to every environment.
func (w *workload) hydrateAs(ctx context.Context, s *strategy, fix bool) (string, error) {
	w.mu.Lock()
	w.nextSeq++
	seq := w.nextSeq
	if fix {
		w.fixes[seq] = true
	}
	w.mu.Unlock()
	h := &hydrator{repo: s.repo, strategy: s.name, cli: s.cli}
	dry, err := h.dryCommit(ctx, fmt.Sprint(seq))
	if err != nil {
		return "", err
	}
	w.mu.Lock()
	w.seq[dry] = seq
	w.repoOf[dry] = s.name
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

// reportHealth writes a health CommitStatus for every active commit: pending first, as a
// rollout starts, then, a pass later, its last state: success, or failure in prod for the dry
// commits the seeded rule picks. The SCM must end up with that last state (invariant 7).
func (w *workload) reportHealth(ctx context.Context) error {
	list, err := w.sluice.PromoterV1alpha1().PromotionStrategies(w.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, ps := range list.Items {
		for _, e := range ps.Status.Environments {
			sha, dry := e.Active.HydratedSHA, e.Active.DrySHA
			w.mu.Lock()
			stage, seq := w.written[sha], w.seq[dry]
			w.mu.Unlock()
			if sha == "" || stage == healthFinal {
				continue
			}
			phase, desc := commitstatusv1.CommitStatusSuccess, "rollout healthy"
			if e.Branch == "prod" && seq > 0 && w.failing(seq) {
				phase, desc = commitstatusv1.CommitStatusFailure, "pods fail readiness"
			}
			if stage == healthNone {
				phase, desc = commitstatusv1.CommitStatusPending, "rolling out"
			}
			if err := w.writeHealth(ctx, ps.Spec.RepositoryRef.Name, sha, stage, phase, desc); err != nil {
				return err
			}
			w.ops.statuses.Add(1)
			w.mu.Lock()
			w.written[sha] = stage + 1
			w.mu.Unlock()
		}
	}
	return nil
}

// Stages of a hydrated commit's health status.
const (
	healthNone = iota
	healthPending
	healthFinal
)

// writeHealth creates the health status of sha (stage healthNone) or sets its last phase.
func (w *workload) writeHealth(ctx context.Context, repo, sha string, stage int, phase commitstatusv1.CommitStatusPhase, desc string) error {
	name := "health-" + sha[:12]
	if stage != healthNone {
		patch := fmt.Sprintf(`{"spec":{"phase":%q,"description":%q}}`, phase, desc)
		_, err := w.sluice.CommitstatusV1alpha1().CommitStatuses(w.ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	_, err := w.sluice.CommitstatusV1alpha1().CommitStatuses(w.ns).Create(ctx, &commitstatusv1.CommitStatus{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{commitstatusv1.KeyLabel: "health"}},
		Spec: commitstatusv1.CommitStatusSpec{RepositoryRef: commitstatusv1.RepositoryReference{Name: repo},
			SHA: sha, Name: "health", Phase: phase, Description: desc},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
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
type hydrator struct {
	repo     *git.Repository
	strategy string
	// cli, for a strategy on Gitea, writes a proposal on top of its environment when the
	// environment moved past the -next branch (see proposeOnEnvironment); nil on plain git,
	// whose proposals stack on the -next branch and merge with a merge commit.
	cli *gitCLI
}

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
		Files: map[string][]byte{"app.yaml": manifest(h.strategy, dry, msg), git.DefaultMetadataFile: git.HydratorNote(dry)},
	})
}

func (h *hydrator) propose(ctx context.Context, env, dry, msg string) error {
	next := env + "-next"
	// A -next branch left from an earlier proposal gets the new one on top, as a hydrator
	// pushes; a first proposal starts from the environment. On Gitea, which merges pull requests
	// for real, a proposal starts again from the environment once it moved past -next.
	if err := h.repo.Fetch(ctx, env, next); err != nil {
		var missing *git.BranchNotFoundError
		if !errors.As(err, &missing) {
			return err
		}
	}
	tip, err := h.repo.Resolve(env)
	if err != nil {
		return err
	}
	last, err := h.repo.Resolve(next)
	if err != nil {
		if err := h.repo.CreateBranch(ctx, next, tip); err != nil {
			return err
		}
	} else if h.cli != nil {
		if onTop, err := h.repo.IsAncestor(tip, last); err != nil || !onTop {
			if err != nil {
				return err
			}
			return h.proposeOnEnvironment(ctx, env, next, tip, last, dry, msg)
		}
	}
	sha, err := h.repo.CommitFiles(ctx, git.CommitRequest{
		Branch: next, Message: msg,
		Files: map[string][]byte{"app.yaml": manifest(h.strategy, dry, msg), git.DefaultMetadataFile: git.HydratorNote(dry)},
	})
	if err != nil {
		return err
	}
	return h.repo.AddNote(ctx, sha, git.HydratorNote(dry), git.Identity{Name: "hydrator", Email: "hydrator@example.com"})
}
