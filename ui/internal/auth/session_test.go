package auth

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRequestsThatFindASessionDueAtOnceShareOneRefresh(t *testing.T) {
	var f refreshes
	var calls atomic.Int32
	release := make(chan struct{})
	refresh := func() (session, error) {
		calls.Add(1)
		<-release
		return session{User: "alice", RefreshToken: "r2"}, nil
	}
	var wg sync.WaitGroup
	got := make([]session, 4)
	for i := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[i], _ = f.do("r1", refresh) }()
	}
	for calls.Load() == 0 {
		runtime.Gosched() // until the first caller refreshes; the others wait for it
	}
	close(release)
	wg.Wait()
	assert.Equal(t, int32(1), calls.Load(), "a rotated refresh token is spent once")
	for _, s := range got {
		assert.Equal(t, "r2", s.RefreshToken)
	}
	_, err := f.do("other", func() (session, error) { return session{}, errors.New("revoked") })
	assert.EqualError(t, err, "revoked", "another session refreshes on its own")
}
