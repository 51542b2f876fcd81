package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/testenv"
)

// The demo story is the end-to-end test: every chapter waits for the state it narrates, so a
// chapter whose controllers misbehave fails here.
func TestDemoStory(t *testing.T) {
	testenv.SkipIfShort(t)
	bin, err := BinDirFromRepo()
	require.NoError(t, err)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	err = Run(ctx, Options{BinDir: bin, Out: &out, LogDir: t.TempDir()})
	if err != nil || testing.Verbose() {
		t.Log(out.String())
	}
	require.NoError(t, err)
	for _, ch := range chapters {
		assert.Contains(t, out.String(), ch.title)
	}
	assert.True(t, strings.HasSuffix(strings.TrimSpace(out.String()), "stopping the controllers and the control plane"))
}

// Cancelling mid-story (Ctrl-C) still stops every process and the control plane.
func TestDemoStopsCleanlyWhenInterrupted(t *testing.T) {
	testenv.SkipIfShort(t)
	bin, err := BinDirFromRepo()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Options{BinDir: bin, Out: &out, LogDir: t.TempDir()}) }()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "Chapter 1") }, 2*time.Minute, 50*time.Millisecond)
	cancel()
	// Run returns only after every controller process has exited and the control plane stopped.
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("demo did not stop within a minute of cancellation")
	}
}
