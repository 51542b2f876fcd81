package promotion

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// line is a dry branch whose commits are in a line, oldest first; "side" is on the branch but
// unrelated to the others, and anything else is not on the branch.
type line []string

func (l line) Compare(x, y string) (Order, error) {
	if x == "side" || y == "side" {
		if x == y {
			return Same, nil
		}
		return Unrelated, nil
	}
	ix, iy := l.pos(x), l.pos(y)
	if ix < 0 || iy < 0 {
		return 0, errors.New("not on the dry branch")
	}
	switch {
	case ix == iy:
		return Same, nil
	case ix > iy:
		return Newer, nil
	default:
		return Older, nil
	}
}

func (l line) pos(s string) int {
	for i, c := range l {
		if c == s {
			return i
		}
	}
	return -1
}

var dry = line{"d1", "d2", "d3"}

func at(d string) Commit { return Commit{DrySHA: d, HydratedSHA: "h-" + d} }

func proposing(d string) Commit { return Commit{DrySHA: d, HydratedSHA: "p-" + d} }

func pass(keys ...string) []Check { return checks(Success, keys...) }

func checks(p Phase, keys ...string) []Check {
	out := make([]Check, len(keys))
	for i, k := range keys {
		out[i] = Check{Key: k, Phase: p}
	}
	return out
}

// settled is dev, staging and prod all on d2 and healthy, with d3 proposed to staging: eligible.
// Each scenario breaks one thing.
func settled() []Environment {
	return []Environment{
		{Branch: "dev", Active: at("d3"), ActiveChecks: pass("health")},
		{Branch: "staging", Active: at("d2"), Proposed: proposing("d3"), ActiveChecks: pass("health"), ProposedChecks: pass("lint")},
		{Branch: "prod", Active: at("d2"), ActiveChecks: pass("health"), Gates: &GateVerdict{Allowed: true}},
	}
}

func TestEvaluateRules(t *testing.T) {
	g, err := NewGraph([]string{"dev", "staging", "prod"}, nil)
	require.NoError(t, err)

	cases := []struct {
		name   string
		env    int
		mutate func([]Environment)
		want   []Rule
	}{
		{name: "all rules pass", env: 1, mutate: func([]Environment) {}},
		{name: "first environment needs no earlier one", env: 0, mutate: func(e []Environment) {
			e[0].Active, e[0].Proposed = at("d2"), proposing("d3")
			e[1].Proposed = Commit{}
		}},
		{name: "rule 1: later environment already newer", env: 1, mutate: func(e []Environment) {
			e[0].Active, e[1].Active, e[1].Proposed, e[2].Active = at("d2"), at("d1"), proposing("d2"), at("d3")
		}, want: []Rule{RuleNoMovingBackwards}},
		{name: "rule 1: proposed dry unrelated to later environment's", env: 1, mutate: func(e []Environment) {
			e[2].Active = at("side")
		}, want: []Rule{RuleNoMovingBackwards}},
		{name: "rule 1: later environment's dry not on the branch", env: 1, mutate: func(e []Environment) {
			e[2].Active = at("rewritten")
		}, want: []Rule{RuleNoMovingBackwards}},
		{name: "rule 2: earlier environment not on the proposed dry", env: 1, mutate: func(e []Environment) {
			e[0].Active = at("d2")
		}, want: []Rule{RuleEarlierEnvironmentActive}},
		{name: "rule 2: earlier of earlier counts too", env: 2, mutate: func(e []Environment) {
			e[1].Active, e[1].Proposed = at("d3"), Commit{}
			e[2].Proposed = proposing("d3")
			e[0].Active = at("d2")
		}, want: []Rule{RuleEarlierEnvironmentActive}},
		{name: "rule 3: earlier environment's active check pending", env: 1, mutate: func(e []Environment) {
			e[0].ActiveChecks = append(pass("sync"), checks(Pending, "health")...)
		}, want: []Rule{RuleEarlierEnvironmentChecks}},
		{name: "rule 3: earlier environment's active check missing", env: 1, mutate: func(e []Environment) {
			e[0].ActiveChecks = []Check{{Key: "health"}}
		}, want: []Rule{RuleEarlierEnvironmentChecks}},
		{name: "rule 3: own active checks do not hold a promotion", env: 1, mutate: func(e []Environment) {
			e[1].ActiveChecks = checks(Failure, "health")
		}},
		{name: "rule 4: proposed check failing", env: 1, mutate: func(e []Environment) {
			e[1].ProposedChecks = checks(Failure, "lint")
		}, want: []Rule{RuleProposedChecks}},
		{name: "gates closed", env: 2, mutate: func(e []Environment) {
			e[1].Active, e[1].Proposed = at("d3"), Commit{}
			e[2].Proposed = proposing("d3")
			e[2].Gates = &GateVerdict{Message: "gate freeze is closed"}
		}, want: []Rule{RuleGates}},
		{name: "no dry SHA on the proposed commit", env: 0, mutate: func(e []Environment) {
			e[0].Proposed = Commit{HydratedSHA: "p-unknown"}
			e[1].Proposed = Commit{}
		}, want: []Rule{RuleUnknownDrySHA}},
		{name: "every rule at once", env: 1, mutate: func(e []Environment) {
			e[0].Active = at("d1")
			e[0].ActiveChecks = checks(Failure, "health")
			e[1].Proposed = proposing("d2")
			e[1].ProposedChecks = checks(Pending, "lint")
			e[2].Active = at("d3")
		}, want: []Rule{RuleNoMovingBackwards, RuleEarlierEnvironmentActive, RuleEarlierEnvironmentChecks, RuleProposedChecks}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			envs := settled()
			tc.mutate(envs)
			v := Evaluate(g, envs, tc.env, dry)
			assert.True(t, v.Proposed)
			assert.Equal(t, len(tc.want) == 0, v.Eligible, v.Message())
			assert.Equal(t, tc.want, nilIfEmpty(v.Rules()), v.Message())
		})
	}
}

func nilIfEmpty(r []Rule) []Rule {
	if len(r) == 0 {
		return nil
	}
	return r
}

func TestEvaluateNothingProposed(t *testing.T) {
	g, err := NewGraph([]string{"dev"}, nil)
	require.NoError(t, err)
	for name, proposed := range map[string]Commit{"no proposed branch": {}, "proposed equals active": at("d1")} {
		t.Run(name, func(t *testing.T) {
			v := Evaluate(g, []Environment{{Branch: "dev", Active: at("d1"), Proposed: proposed}}, 0, dry)
			assert.False(t, v.Proposed)
			assert.False(t, v.Eligible)
			assert.Empty(t, v.Blocks)
		})
	}
}

func TestEvaluateMessagesNameTheCheck(t *testing.T) {
	g, err := NewGraph([]string{"dev", "staging"}, nil)
	require.NoError(t, err)
	envs := []Environment{
		{Branch: "dev", Active: at("d2"), ActiveChecks: checks(Failure, "argocd-health")},
		{Branch: "staging", Active: at("d1"), Proposed: proposing("d2")},
	}
	v := Evaluate(g, envs, 1, dry)
	require.False(t, v.Eligible)
	assert.Contains(t, v.Message(), "argocd-health on dev is failure")
}

// In a fan-out, siblings do not wait for each other; the fan-in waits for both branches.
func TestEvaluateDAG(t *testing.T) {
	g, err := NewGraph([]string{"dev", "eu", "us", "global"}, [][]string{nil, {"dev"}, {"dev"}, {"eu", "us"}})
	require.NoError(t, err)
	envs := []Environment{
		{Branch: "dev", Active: at("d2")},
		{Branch: "eu", Active: at("d1"), Proposed: proposing("d2")},
		{Branch: "us", Active: at("d1"), Proposed: proposing("d2")},
		{Branch: "global", Active: at("d1"), Proposed: proposing("d2")},
	}
	assert.True(t, Evaluate(g, envs, 1, dry).Eligible, "eu does not wait for us")
	assert.True(t, Evaluate(g, envs, 2, dry).Eligible, "us does not wait for eu")
	v := Evaluate(g, envs, 3, dry)
	assert.Equal(t, []Rule{RuleEarlierEnvironmentActive, RuleEarlierEnvironmentActive}, v.Rules(), v.Message())
	envs[1].Active = at("d2")
	v = Evaluate(g, envs, 3, dry)
	assert.Equal(t, []Rule{RuleEarlierEnvironmentActive}, v.Rules(), "still waits for us: %s", v.Message())
	envs[2].Active = at("d2")
	assert.True(t, Evaluate(g, envs, 3, dry).Eligible)
}

func TestGraph(t *testing.T) {
	g, err := NewGraph([]string{"a", "b", "c", "d"}, [][]string{nil, {"a"}, {"a"}, {"b", "c"}})
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1, 2}, g.Before(3))
	assert.Equal(t, []int{1, 2, 3}, g.After(0))
	assert.Empty(t, g.After(3))
	assert.Equal(t, 2, g.Index("c"))
	assert.Equal(t, -1, g.Index("z"))

	linear, err := NewGraph([]string{"a", "b", "c"}, nil)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1}, linear.Before(2))
	assert.Equal(t, []int{2}, linear.After(1))

	bad := map[string]struct {
		branches []string
		after    [][]string
		want     string
	}{
		"unknown":   {[]string{"a", "b"}, [][]string{nil, {"x"}}, `"x", which is not an environment`},
		"self":      {[]string{"a", "b"}, [][]string{nil, {"b"}}, "cannot wait for itself"},
		"duplicate": {[]string{"a", "a"}, nil, "listed twice"},
		"cycle":     {[]string{"a", "b", "c"}, [][]string{{"c"}, {"a"}, {"b"}}, "cycle"},
		"empty":     {[]string{""}, nil, "no branch"},
	}
	for name, tc := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := NewGraph(tc.branches, tc.after)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestAggregate(t *testing.T) {
	assert.Equal(t, Success, Aggregate(nil))
	assert.Equal(t, Success, Aggregate(pass("a", "b")))
	assert.Equal(t, Pending, Aggregate(append(pass("a"), Check{Key: "b"})))
	assert.Equal(t, Failure, Aggregate(append(checks(Pending, "a"), checks(Failure, "b")...)))
	assert.Equal(t, Pending, KeyPhase(nil))
	assert.Equal(t, Success, KeyPhase([]Phase{Pending, Success}))
	assert.Equal(t, Failure, KeyPhase([]Phase{Success, Failure}))
}

func TestRecordHealthyIsBoundedAndNewestFirst(t *testing.T) {
	var list = RecordHealthy(nil, "", "", timeAt(0))
	assert.Empty(t, list)
	for i := range 15 {
		list = RecordHealthy(list, fmt.Sprintf("d%d", i), "h", timeAt(i))
	}
	require.Len(t, list, 10)
	assert.Equal(t, "d14", list[0].SHA)
	assert.Equal(t, "d5", list[9].SHA)
	again := RecordHealthy(list, "d14", "h", timeAt(99))
	assert.Equal(t, list[0].Time, again[0].Time, "the first time a SHA was healthy is kept")
	moved := RecordHealthy(list, "d7", "h", timeAt(100))
	assert.Equal(t, "d7", moved[0].SHA)
	assert.Len(t, moved, 10)
	count := 0
	for _, h := range moved {
		if h.SHA == "d7" {
			count++
		}
	}
	assert.Equal(t, 1, count)
}

// A revert holds its dry SHA and every older one out of its environment; a fix forward (newer)
// goes through, and other environments are not held.
func TestEvaluateHeldAfterRollback(t *testing.T) {
	g, err := NewGraph([]string{"dev", "staging", "prod"}, nil)
	require.NoError(t, err)
	hold := []Hold{{RevertCommit: "team/revert-prod", DrySHA: "d2"}}
	cases := map[string]struct {
		proposed string
		held     bool
	}{
		"the reverted dry SHA":    {"d2", true},
		"an older dry SHA":        {"d1", true},
		"a fix forward":           {"d3", false},
		"unrelated on the branch": {"side", true},
		"not on the dry branch":   {"gone", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			envs := []Environment{
				{Branch: "dev", Active: at(tc.proposed)},
				{Branch: "staging", Active: at(tc.proposed)},
				{Branch: "prod", Active: at("d0"), Proposed: proposing(tc.proposed), Holds: hold},
			}
			v := Evaluate(g, envs, 2, dryWithSide)
			if !tc.held {
				assert.True(t, v.Eligible, v.Message())
				return
			}
			require.Equal(t, []Rule{RuleHeldAfterRollback}, v.Rules(), v.Message())
			assert.Equal(t, "prod", v.Blocks[0].Environment)
			assert.Contains(t, v.Message(), "RevertCommit team/revert-prod reverted dry d2")
			assert.Contains(t, v.Message(), "rollback.sluice.dev/lift-hold")
		})
	}
}

// dryWithSide is dry with d0 first, so a rolled-back environment can run it.
var dryWithSide = line{"d0", "d1", "d2", "d3"}

// Each block names the environment its rule looks at.
func TestEvaluateBlocksNameTheirEnvironment(t *testing.T) {
	g, err := NewGraph([]string{"dev", "staging", "prod"}, nil)
	require.NoError(t, err)
	envs := settled()
	envs[0].Active = at("d1")
	envs[0].ActiveChecks = checks(Failure, "health")
	envs[1].Proposed = proposing("d2")
	envs[1].ProposedChecks = checks(Pending, "lint")
	envs[2].Active = at("d3")
	v := Evaluate(g, envs, 1, dry)
	var got []string
	for _, b := range v.Blocks {
		got = append(got, string(b.Rule)+"@"+b.Environment)
	}
	assert.Equal(t, []string{"NoMovingBackwards@prod", "EarlierEnvironmentActive@dev", "EarlierEnvironmentChecks@dev", "ProposedChecks@staging"}, got)
}

// A check that does not pass says why, in its author's words: a health verdict from another
// cluster arrives as an imported CommitStatus whose description is that cluster's message.
func TestEvaluateMessagesCarryTheChecksOwnMessage(t *testing.T) {
	g, err := NewGraph([]string{"staging", "prod"}, nil)
	require.NoError(t, err)
	envs := []Environment{
		{Branch: "staging", Active: at("d2"), ActiveChecks: []Check{{Key: "health-staging", Phase: Failure, Message: "Failed: 1 Failed (Deployment web)"}}},
		{Branch: "prod", Active: at("d1"), Proposed: proposing("d2"), ProposedChecks: []Check{{Key: "ci-lint", Phase: Pending, Message: "lint is running"}}},
	}
	v := Evaluate(g, envs, 1, dry)
	require.False(t, v.Eligible)
	assert.Contains(t, v.Message(), "health-staging on staging is failure: Failed: 1 Failed (Deployment web)")
	assert.Contains(t, v.Message(), "ci-lint on prod is pending: lint is running")
}
