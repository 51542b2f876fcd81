package gate

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

type graph map[Ref][]Ref

func (g graph) refsOf(r Ref) []Ref { return g[r] }

func TestCycleFindsSelfReferencesAndCycles(t *testing.T) {
	a, b, c, d := Ref{"ns", "a"}, Ref{"ns", "b"}, Ref{"ns", "c"}, Ref{"other", "d"}
	g := graph{
		a:           {a},    // a kustomize commonAnnotation landing on the gate itself
		b:           {c, d}, // b -> c -> b
		c:           {b},    //
		d:           {},     // d references nothing
		{"ns", "e"}: {d},    // e -> d: no cycle
	}
	assert.Equal(t, []Ref{a, a}, Cycle(a, g.refsOf))
	assert.Equal(t, "gate ns/a names itself", FormatCycle(Cycle(a, g.refsOf)))
	assert.Equal(t, []Ref{b, c, b}, Cycle(b, g.refsOf))
	assert.Equal(t, "gates ns/b -> ns/c -> ns/b", FormatCycle(Cycle(b, g.refsOf)))
	assert.Equal(t, []Ref{c, b, c}, Cycle(c, g.refsOf))
	assert.Nil(t, Cycle(d, g.refsOf))
	assert.Nil(t, Cycle(Ref{"ns", "e"}, g.refsOf))
	assert.Nil(t, Cycle(Ref{"ns", "missing"}, g.refsOf))

	kept, cycles := Acyclic(b, []Ref{c, d}, g.refsOf)
	assert.Equal(t, []Ref{d}, kept, "d does not lead back to b, so it still holds b")
	assert.Equal(t, [][]Ref{{b, c, b}}, cycles)
	kept, cycles = Acyclic(a, []Ref{a}, g.refsOf)
	assert.Empty(t, kept)
	assert.Equal(t, [][]Ref{{a, a}}, cycles)
}

func TestCycleSearchIsBounded(t *testing.T) {
	// An endless chain of references that never comes back ends the search without a cycle.
	chain := func(r Ref) []Ref { return []Ref{{"ns", r.Name + "x"}} }
	assert.Nil(t, Cycle(Ref{"ns", "start"}, chain))
}
