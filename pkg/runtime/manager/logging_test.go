package manager

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/testenv"
)

// Every JSON line a controller process prints has each key once: the process logger and the
// controller's own logger both name things, and a duplicate key makes Elasticsearch reject the line.
func TestJSONLogLinesHaveEachKeyOnce(t *testing.T) {
	var out testenv.SyncBuffer
	opts := options.Defaults("dup-test")
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
	keepGlobalLoggers(t)
	log := processLogger(&out, "dup-test", opts)
	// No API server is contacted: the controller runs without informers.
	m, err := New("dup-test", opts, &rest.Config{Host: "https://127.0.0.1:1"}, log)
	require.NoError(t, err)

	reconciled := make(chan struct{})
	var once sync.Once
	c := m.NewController("widgets", controller.ReconcilerFunc(func(context.Context, string) (controller.Result, error) {
		defer once.Do(func() { close(reconciled) })
		return controller.Result{}, errors.New("widget is broken")
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 1) }()
	c.Enqueue("team/w")
	<-reconciled
	cancel()
	require.NoError(t, <-done)

	lines := 0
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		lines++
		keys, err := topLevelKeys(sc.Bytes())
		require.NoError(t, err, sc.Text())
		seen := map[string]bool{}
		for _, k := range keys {
			assert.False(t, seen[k], "key %q twice in %s", k, sc.Text())
			seen[k] = true
		}
		assert.True(t, seen["controller"], "the controller's lines name it: %s", sc.Text())
	}
	assert.GreaterOrEqual(t, lines, 2, "starting workers, and the failed reconcile:\n%s", out.String())
	assert.Contains(t, out.String(), `"controller":"widgets"`)
	assert.Contains(t, out.String(), `"process":"dup-test"`)
}

// keepGlobalLoggers restores slog's and klog's defaults, which the process logger replaces, when
// the test ends.
func keepGlobalLoggers(t *testing.T) {
	prev := slog.Default()
	t.Cleanup(func() {
		slog.SetDefault(prev)
		klog.ClearLogger()
	})
}

// topLevelKeys lists the keys of a JSON object in order, duplicates included, which
// json.Unmarshal would merge.
func topLevelKeys(line []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}
