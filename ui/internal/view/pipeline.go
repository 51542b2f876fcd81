package view

import (
	"cmp"
	"slices"
	"time"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/promotion"
)

// Pipeline is one PromotionStrategy: its environments in the order promotions flow.
type Pipeline struct {
	Namespace, Name string
	DryBranch       string
	Suspended       string
	// Problem is the strategy's own complaint (Ready=False or Stalled), in its words.
	Problem      string
	Environments []Environment
}

// Environment is one environment of a pipeline.
type Environment struct {
	Branch    string
	WaitsFor  []string
	AutoMerge bool
	Active    Commit
	Proposed  Commit
	// Change links what a promotion of Proposed would change, when it differs from Active.
	Change *Change
	// Agents are the Flux Kustomizations and Argo CD Applications that deploy the environment.
	Agents []Agent
	// PullRequest is the open or last promotion pull request, if any.
	PullRequest *PullRequest
	Gates       []GateHold
	Healthy     []HealthySHA
	Eligible    bool
	// Blocked is the promoter's own summary of why the next promotion waits.
	Blocked string
	Blocks  []promoterv1alpha1.PromotionBlock
	Reverts []Revert
	History []promoterv1alpha1.PromotionRecord
}

// Commit is one side (active or proposed) of an environment.
type Commit struct {
	DrySHA, HydratedSHA string
	DryURL, HydratedURL string
	Subject             string
	Phase               string
	Time                *time.Time
	Checks              []Check
}

// Check is one commit-status key and what its CommitStatus says.
type Check struct {
	Key, Phase, Description, URL string
}

// PullRequest is a promotion pull request.
type PullRequest struct {
	Name, State, URL string
	// WaitsForPerson is set when the environment does not merge on its own and the pull request
	// is open: a person merges it.
	WaitsForPerson bool
}

// GateHold is a Gate an environment names, and what it says now.
type GateHold struct {
	Namespace, Name string
	Missing         bool
	Open            bool
	Reason, Message string
	NextChange      *time.Time
	// Approval is the gate's approval of the environment's proposed dry SHA, by which a closed
	// gate lets that promotion through.
	Approval *gatingv1alpha1.GateApproval
}

// HealthySHA is a dry commit an environment was healthy on.
type HealthySHA struct {
	SHA, HydratedSHA string
	URL              string
	Time             time.Time
}

// Revert is a RevertCommit of an environment that is not merged yet, or holds it after merging.
type Revert struct {
	Name, Phase, TargetDrySHA, BadDrySHA, Reason, PullRequestURL string
}

// PipelineInput is what BuildPipeline reads besides the strategy: lookups into the store.
type PipelineInput struct {
	Links          Links
	Gate           func(namespace, name string) *gatingv1alpha1.Gate
	CommitStatuses []*commitstatusv1alpha1.CommitStatus
	RevertCommits  []*rollbackv1alpha1.RevertCommit
	// Agents finds the delivery agents' objects that deploy an environment branch; nil: none.
	Agents func(branch string) []Agent
}

// BuildPipeline lays a strategy out environment by environment, in DAG order.
func BuildPipeline(s *promoterv1alpha1.PromotionStrategy, in PipelineInput) Pipeline {
	p := Pipeline{Namespace: s.Namespace, Name: s.Name, DryBranch: s.Spec.DryBranch,
		Suspended: suspendedReason(s, s.Spec.Suspend), Problem: problem(s.Status.Conditions)}
	statuses := map[string]promoterv1alpha1.EnvironmentStatus{}
	for _, st := range s.Status.Environments {
		statuses[st.Branch] = st
	}
	checks := checkIndex(in.CommitStatuses)
	for _, i := range dagOrder(s.Spec.Environments) {
		spec := s.Spec.Environments[i]
		st := statuses[spec.Branch]
		env := Environment{
			Branch: spec.Branch, WaitsFor: waitsFor(s.Spec.Environments, i),
			AutoMerge: spec.AutoMerge == nil || *spec.AutoMerge,
			Active:    commit(st.Active, in.Links, checks), Proposed: commit(st.Proposed, in.Links, checks),
			Eligible: st.Eligible, Blocked: st.Blocked, Blocks: st.Blocks, History: st.History,
			Gates:   withApprovals(gateHolds(spec.Gates, s.Namespace, in.Gate), st.Proposed.DrySHA, in.Gate),
			Reverts: reverts(s.Name, spec.Branch, in.RevertCommits),
		}
		env.Change = environmentChange(in.Links, s, spec.Branch, env.Active, env.Proposed)
		if in.Agents != nil {
			env.Agents = in.Agents(spec.Branch)
		}
		if pr := st.PullRequest; pr != nil {
			env.PullRequest = &PullRequest{Name: pr.Name, State: string(pr.State), URL: pr.URL,
				WaitsForPerson: !env.AutoMerge && pr.State == promoterv1alpha1.PullRequestOpen}
		}
		for _, h := range st.LastHealthyDrySHAs {
			env.Healthy = append(env.Healthy, HealthySHA{SHA: h.SHA, HydratedSHA: h.HydratedSHA, URL: in.Links.Commit(h.SHA), Time: h.Time.Time})
		}
		p.Environments = append(p.Environments, env)
	}
	return p
}

// dagOrder sorts environments so each comes after every environment it waits for: by how many
// environments it waits for, directly or not, then in spec order. A spec the promoter would
// refuse (a cycle) keeps its spec order.
func dagOrder(envs []promoterv1alpha1.Environment) []int {
	order := make([]int, len(envs))
	for i := range order {
		order[i] = i
	}
	g, err := graphOf(envs)
	if err != nil {
		return order
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(g.Before(a)), len(g.Before(b))) })
	return order
}

func graphOf(envs []promoterv1alpha1.Environment) (*promotion.Graph, error) {
	branches := make([]string, len(envs))
	after := make([][]string, len(envs))
	for i, e := range envs {
		branches[i], after[i] = e.Branch, e.After
	}
	return promotion.NewGraph(branches, after)
}

func waitsFor(envs []promoterv1alpha1.Environment, i int) []string {
	if len(envs[i].After) > 0 {
		return envs[i].After
	}
	if i > 0 {
		return []string{envs[i-1].Branch}
	}
	return nil
}
