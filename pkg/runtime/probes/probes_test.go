package probes

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func start(t *testing.T, addrs Addresses) Addresses {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := New(addrs, prometheus.NewRegistry(), nil)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	bound, err := s.Addrs(ctx)
	require.NoError(t, err)
	return bound
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func TestTheProfilerIsOffUnlessAnAddressIsGiven(t *testing.T) {
	bound := start(t, Addresses{Metrics: "127.0.0.1:0", Probes: "127.0.0.1:0", Profiler: "0"})
	assert.Empty(t, bound.Profiler)
	for _, addr := range []string{bound.Metrics, bound.Probes} {
		code, _ := get(t, "http://"+addr+"/debug/pprof/heap")
		assert.Equal(t, http.StatusNotFound, code, "pprof is not served beside %s", addr)
	}
}

func TestTheProfilerServesAHeapProfileOnItsOwnAddress(t *testing.T) {
	bound := start(t, Addresses{Metrics: "0", Probes: "0", Profiler: "127.0.0.1:0"})
	require.NotEmpty(t, bound.Profiler)
	assert.Empty(t, bound.Metrics)
	code, body := get(t, "http://"+bound.Profiler+"/debug/pprof/heap?debug=1")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "heap profile:")
	code, _ = get(t, "http://"+bound.Profiler+"/metrics")
	assert.Equal(t, http.StatusNotFound, code, "the profiler's server serves nothing else")
}
