package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewLimiterStartsWithAFullBucket(t *testing.T) {
	// With a near-zero refill rate, only tokens present from the start can be taken.
	l := NewLimiter(Limits{QPS: 0.001, Burst: 3})
	for i := range 3 {
		assert.True(t, l.bucket.Allow(), "token %d of the initial burst", i+1)
	}
	assert.False(t, l.bucket.Allow(), "the fourth request has to wait for a refill")
}

func TestWaitReturnsPausedWhenTheQueueOutlastsTheDeadline(t *testing.T) {
	l := NewLimiter(Limits{QPS: 0.01, Burst: 1})
	require.NoError(t, l.Wait(context.Background(), time.Minute), "the first token is there")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := l.Wait(ctx, time.Minute)
	wait, ok := IsPaused(err)
	require.True(t, ok, "%v", err)
	assert.Greater(t, wait, 90*time.Second, "the next token comes after 100s at 0.01/s")
	assert.Equal(t, int64(1), l.Requests())
}
