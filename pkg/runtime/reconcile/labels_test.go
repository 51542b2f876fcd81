package reconcile

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHasLabels(t *testing.T) {
	want := map[string]string{"app": "web", "tier": "front"}
	assert.True(t, HasLabels(map[string]string{"app": "web", "tier": "front", "extra": "x"}, want))
	assert.False(t, HasLabels(map[string]string{"app": "web"}, want), "one missing")
	assert.False(t, HasLabels(map[string]string{"app": "web", "tier": "back"}, want), "one different")
	assert.True(t, HasLabels(nil, nil))
}
