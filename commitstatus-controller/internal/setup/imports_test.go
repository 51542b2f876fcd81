package setup

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSelectorKeysAreTheKeysAShardSelectorNames(t *testing.T) {
	for selector, want := range map[string][]string{
		"":                                nil,
		"sluice.dev/shard=a":              {"sluice.dev/shard"},
		"sluice.dev/shard!=b,tier in (x)": {"sluice.dev/shard", "tier"},
		"!sluice.dev/shard":               {"sluice.dev/shard"},
		"tier=x,tier!=y,sluice.dev/shard": {"sluice.dev/shard", "tier"},
	} {
		got, err := selectorKeys(selector)
		require.NoError(t, err, selector)
		if want == nil {
			assert.Empty(t, got, selector)
			continue
		}
		assert.Equal(t, want, got, selector)
	}
	_, err := selectorKeys("a in (")
	assert.Error(t, err)
}
