package bench

import (
	"bufio"
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

const (
	// openPages is how many strategy pages are open, each with its own stream.
	openPages = 50
	// writesPerRun is one iteration: a status write every writeEvery, to strategies spread over
	// all 1,000, one in 20 of them a strategy whose page is open.
	writesPerRun = 100
	writeEvery   = 100 * time.Millisecond
)

var watchAttr = regexp.MustCompile(`data-watch="([^"]*)"`)

// livePage is one open page as app.js runs it: it opens /events naming what the page shows
// (its data-watch), and fetches itself again when a change names one of those or "*".
type livePage struct {
	path                   string
	streamBytes, pageBytes *atomic.Int64
	refreshes              *atomic.Int64
	ready                  chan struct{}
	readyOnce              sync.Once
	watch                  map[string]bool
	cancel                 context.CancelFunc
	done                   chan struct{}
}

func (p *livePage) fetch(b *testing.B) string {
	resp, err := uiClient.Get(uiURL + p.path)
	require.NoError(b, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b, err)
	p.pageBytes.Add(int64(len(body)))
	return string(body)
}

func (p *livePage) open(b *testing.B) {
	body := p.fetch(b)
	m := watchAttr.FindStringSubmatch(body)
	require.NotNil(b, m, "the page names what it shows")
	watch := html.UnescapeString(m[1])
	p.watch = map[string]bool{}
	for _, k := range strings.Split(watch, ",") {
		p.watch[k] = true
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uiURL+"/events?watch="+url.QueryEscape(watch), nil)
	require.NoError(b, err)
	resp, err := uiClient.Do(req)
	require.NoError(b, err)
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		defer resp.Body.Close()
		p.read(b, resp.Body)
	}()
}

// read follows the stream: one fetch after "ready", and one per change that names the page.
func (p *livePage) read(b *testing.B, body io.Reader) {
	lines := bufio.NewScanner(body)
	event := ""
	for lines.Scan() {
		line := lines.Text()
		p.streamBytes.Add(int64(len(line) + 1))
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event == "ready":
			p.fetch(b)
			p.readyOnce.Do(func() { close(p.ready) })
		case strings.HasPrefix(line, "data: ") && event == "change":
			for _, k := range strings.Split(strings.TrimPrefix(line, "data: "), ",") {
				if k == "*" || p.watch[k] {
					p.fetch(b)
					p.refreshes.Add(1)
					break
				}
			}
		}
	}
}

// cpuTicks is the UI process's user and system CPU time, in clock ticks (1/100 s on Linux).
func cpuTicks(b *testing.B, pid int) int64 {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(b, err)
	// Fields after the command (which may hold spaces) start at state, field 3.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, err := strconv.ParseInt(fields[11], 10, 64)
	require.NoError(b, err)
	stime, err := strconv.ParseInt(fields[12], 10, 64)
	require.NoError(b, err)
	return utime + stime
}

// BenchmarkLiveAtScale: 1,000 strategies and 50 open pages, each following the stream as app.js
// does, under a write every 100 ms. One iteration is 100 writes (10 s). It reports the UI
// process's CPU time, the bytes sent on the streams and the bytes of the pages fetched again,
// per write, and how many pages refreshed per write.
//   - strategy-writes: 50 strategy pages; status writes spread over all 1,000 strategies, one in
//     20 of them to a strategy whose page is open.
//   - flux-reconciles: 50 gate pages, each gate named by a Kustomization that real Flux deploys;
//     a reconcile request (`flux reconcile kustomization`) to one of 100 Kustomizations that name
//     other gates, each followed by kustomize-controller's own status writes. Figures are per
//     request, and it reports the writes to Kustomizations per request.
func BenchmarkLiveAtScale(b *testing.B) {
	b.Run("strategy-writes", func(b *testing.B) {
		paths := make([]string, openPages)
		for i := range paths {
			n := i * (strategies / openPages)
			paths[i] = fmt.Sprintf("/pipelines/team-%02d/app-%04d", n%namespaces, n)
		}
		measureLive(b, paths, func(ctx context.Context, writes int) {
			n := (writes * 13) % strategies
			client := env.Sluice.PromoterV1alpha1().PromotionStrategies(fmt.Sprintf("team-%02d", n%namespaces))
			_, err := testenv.Update(ctx, statusClient{client}, fmt.Sprintf("app-%04d", n), func(p *promoterv1alpha1.PromotionStrategy) {
				p.Status.Environments[0].Blocked = "live write " + strconv.Itoa(writes)
			})
			require.NoError(b, err)
		})
	})
	b.Run("flux-reconciles", func(b *testing.B) {
		seedKustomizations(b)
		paths := make([]string, openPages)
		for i := range paths {
			paths[i] = fmt.Sprintf("/gates/team-%02d/gate-%03d", i%namespaces, i)
		}
		before := fluxWrites.Load()
		requests := measureLive(b, paths, func(_ context.Context, writes int) {
			n := openPages + writes%unrelatedKustomizations
			flux.RequestReconcile(b, env, flux.Kustomizations, fmt.Sprintf("team-%02d", n%namespaces), fmt.Sprintf("apps-%03d", n))
		})
		b.ReportMetric(float64(fluxWrites.Load()-before)/float64(requests), "kustomization-writes/request")
	})
}

// measureLive opens a live page at each of paths, then makes writesPerRun writes (write(ctx, n)
// for the nth) every writeEvery per iteration, reports the figures per write and returns how many
// writes it made.
func measureLive(b *testing.B, paths []string, write func(ctx context.Context, n int)) int {
	var streamBytes, pageBytes, refreshes atomic.Int64
	pages := make([]*livePage, len(paths))
	for i, path := range paths {
		pages[i] = &livePage{path: path, streamBytes: &streamBytes, pageBytes: &pageBytes, refreshes: &refreshes, ready: make(chan struct{})}
		pages[i].open(b)
	}
	defer func() {
		for _, p := range pages {
			p.cancel()
			<-p.done
		}
	}()
	for _, p := range pages {
		<-p.ready
	}
	ctx := context.Background()
	writes := 0
	var ticks int64
	streamBytes.Store(0)
	pageBytes.Store(0)
	refreshes.Store(0)
	for b.Loop() {
		start := cpuTicks(b, ui.Process.Pid)
		next := time.Now()
		for range writesPerRun {
			write(ctx, writes)
			writes++
			next = next.Add(writeEvery)
			time.Sleep(time.Until(next))
		}
		// The last writes' pushes and fetches land within a second on this machine.
		time.Sleep(time.Second)
		ticks += cpuTicks(b, ui.Process.Pid) - start
	}
	perWrite := func(v int64) float64 { return float64(v) / float64(writes) }
	b.ReportMetric(perWrite(ticks*10), "ui-cpu-ms/write")
	b.ReportMetric(perWrite(streamBytes.Load()), "stream-B/write")
	b.ReportMetric(perWrite(pageBytes.Load()), "page-B/write")
	b.ReportMetric(perWrite(refreshes.Load()), "refreshes/write")
	return writes
}
