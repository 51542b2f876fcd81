package web

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every page's template parses with the layout; the browser tests render them with real objects.
func TestEveryPageParses(t *testing.T) {
	pages, err := parsePages()
	require.NoError(t, err)
	for _, name := range []string{"pipelines", "pipeline", "gates", "health", "rollbacks", "search", "notfound", "action", "confirm"} {
		assert.Contains(t, pages, name)
	}
}
