package promotion

import (
	"fmt"
	"strings"
)

// Graph is the order of a strategy's environments: who waits for whom.
type Graph struct {
	branches []string
	index    map[string]int
	// before[i] are the environments i waits for directly.
	before [][]int
}

// NewGraph builds the order of environments listed as branches, where after[i] names the
// environments branches[i] waits for. An empty after[i] means the environment listed just before
// it (none for the first), which gives the linear order of the proposal. after may be shorter than
// branches. Unknown names, duplicates, an environment waiting for itself and cycles are errors.
func NewGraph(branches []string, after [][]string) (*Graph, error) {
	g := &Graph{branches: branches, index: make(map[string]int, len(branches)), before: make([][]int, len(branches))}
	for i, b := range branches {
		if b == "" {
			return nil, fmt.Errorf("environment %d has no branch", i+1)
		}
		if _, dup := g.index[b]; dup {
			return nil, fmt.Errorf("environment branch %q is listed twice", b)
		}
		g.index[b] = i
	}
	for i := range branches {
		var names []string
		if i < len(after) {
			names = after[i]
		}
		if len(names) == 0 {
			if i > 0 {
				g.before[i] = []int{i - 1}
			}
			continue
		}
		for _, n := range names {
			j, ok := g.index[n]
			switch {
			case !ok:
				return nil, fmt.Errorf("environment %q waits for %q, which is not an environment of this strategy", branches[i], n)
			case j == i:
				return nil, fmt.Errorf("environment %q cannot wait for itself", branches[i])
			}
			g.before[i] = append(g.before[i], j)
		}
	}
	if cycle := g.findCycle(); cycle != nil {
		return nil, fmt.Errorf("environments wait for each other in a cycle: %s", strings.Join(cycle, " -> "))
	}
	return g, nil
}

// Len is the number of environments.
func (g *Graph) Len() int { return len(g.branches) }

// Branch is the branch of environment i.
func (g *Graph) Branch(i int) string { return g.branches[i] }

// Index returns the position of branch, or -1.
func (g *Graph) Index(branch string) int {
	if i, ok := g.index[branch]; ok {
		return i
	}
	return -1
}

// Before returns every environment i waits for, directly or not, in spec order.
func (g *Graph) Before(i int) []int {
	seen := make([]bool, len(g.branches))
	var walk func(int)
	walk = func(k int) {
		for _, j := range g.before[k] {
			if !seen[j] {
				seen[j] = true
				walk(j)
			}
		}
	}
	walk(i)
	return collect(seen)
}

// After returns every environment that waits for i, directly or not, in spec order.
func (g *Graph) After(i int) []int {
	seen := make([]bool, len(g.branches))
	var walk func(int)
	walk = func(k int) {
		for j := range g.branches {
			if !seen[j] && contains(g.before[j], k) {
				seen[j] = true
				walk(j)
			}
		}
	}
	walk(i)
	return collect(seen)
}

func (g *Graph) findCycle() []string {
	const (
		unvisited = iota
		visiting
		done
	)
	state := make([]int, len(g.branches))
	var path []int
	var visit func(int) []string
	visit = func(i int) []string {
		state[i] = visiting
		path = append(path, i)
		for _, j := range g.before[i] {
			switch state[j] {
			case visiting:
				var names []string
				start := 0
				for k, p := range path {
					if p == j {
						start = k
					}
				}
				for _, p := range path[start:] {
					names = append(names, g.branches[p])
				}
				return append(names, g.branches[j])
			case unvisited:
				if c := visit(j); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = done
		return nil
	}
	for i := range g.branches {
		if state[i] == unvisited {
			if c := visit(i); c != nil {
				return c
			}
		}
	}
	return nil
}

func collect(seen []bool) []int {
	var out []int
	for i, s := range seen {
		if s {
			out = append(out, i)
		}
	}
	return out
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
