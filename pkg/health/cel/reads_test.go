package cel

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadsListsTheFieldsAnExpressionCanSee(t *testing.T) {
	c := newTestCompiler(t)
	cases := map[string][][]string{
		"status.conditions.exists(c, c.type == 'Ready')":                   {{"status", "conditions"}},
		"self.spec.replicas == status.replicas":                            {{"spec", "replicas"}, {"status", "replicas"}},
		"has(self.spec.paused) && !spec.paused":                            {{"spec", "paused"}, {"spec", "paused"}},
		"status.?phase.orValue('') == 'Ready'":                             {{"status", "phase"}},
		"self.spec['template'].metadata.name == ''":                        {{"spec", "template", "metadata", "name"}},
		"spec.items[0] == 1":                                               {{"spec", "items"}},
		"spec.m[metadata.name] == 1":                                       {{"spec", "m"}, {"metadata", "name"}},
		"size(spec) > 0":                                                   {{"spec"}},
		"self.data.ready == 'yes'":                                         {{"data", "ready"}},
		"has(self.status)":                                                 {{"status"}},
		"self == self":                                                     {nil, nil},
		"[1, 2].all(x, x > 0)":                                             nil,
		"status.conditions.filter(c, c.type == 'A').all(c, c.x == spec.y)": {{"status", "conditions"}, {"spec", "y"}},
		"spec.s.replace('a', 'b') == kind":                                 {{"spec", "s"}, {"kind"}},
	}
	for expr, want := range cases {
		prg, err := c.Compile(expr)
		require.NoError(t, err, expr)
		assert.ElementsMatch(t, want, prg.Reads(), expr)
	}
}
