package ratelimit

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNewLimiterStartsWithAFullBucket(t *testing.T) {
	// With a near-zero refill rate, only tokens present from the start can be taken.
	l := NewLimiter(Limits{QPS: 0.001, Burst: 3})
	for i := range 3 {
		assert.True(t, l.bucket.Allow(), "token %d of the initial burst", i+1)
	}
	assert.False(t, l.bucket.Allow(), "the fourth request has to wait for a refill")
}
