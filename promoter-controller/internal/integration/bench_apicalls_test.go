package integration

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// apiCalls is what a promoter process's client-go reported on /metrics about its requests to
// the Kubernetes API: requests by method, those the API server refused with a conflict, and
// the time requests spent waiting for the client-side rate limiter (--kube-api-qps), summed.
type apiCalls struct {
	ByMethod      map[string]float64
	Conflicts     float64
	RateLimitWait float64
}

func (c apiCalls) total() float64 {
	var n float64
	for _, v := range c.ByMethod {
		n += v
	}
	return n
}

// minus is the calls made between an earlier scrape and this one.
func (c apiCalls) minus(earlier apiCalls) apiCalls {
	out := apiCalls{ByMethod: map[string]float64{}, Conflicts: c.Conflicts - earlier.Conflicts,
		RateLimitWait: c.RateLimitWait - earlier.RateLimitWait}
	for m, v := range c.ByMethod {
		out.ByMethod[m] = v - earlier.ByMethod[m]
	}
	return out
}

// freeMetricsAddr is a loopback address nothing listens on, for a promoter's --metrics-bind-address.
func freeMetricsAddr(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(b, err)
	addr := ln.Addr().String()
	must(b, ln.Close())
	return addr
}

// scrapeAPICalls reads rest_client_requests_total and rest_client_rate_limiter_duration_seconds
// from the text exposition of the process at addr.
func scrapeAPICalls(addr string) (apiCalls, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return apiCalls{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return apiCalls{}, fmt.Errorf("GET %s/metrics: %s", addr, resp.Status)
	}
	out := apiCalls{ByMethod: map[string]float64{}}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		series, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return apiCalls{}, fmt.Errorf("metrics line %q: %w", line, err)
		}
		switch {
		case strings.HasPrefix(series, "rest_client_requests_total{"):
			out.ByMethod[label(series, "method")] += v
			if label(series, "code") == "409" {
				out.Conflicts += v
			}
		case strings.HasPrefix(series, "rest_client_rate_limiter_duration_seconds_sum{"):
			out.RateLimitWait += v
		}
	}
	return out, sc.Err()
}

// label is the value of label name in a series such as metric{a="x",name="y"}.
func label(series, name string) string {
	_, rest, ok := strings.Cut(series, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// serverRequests is the API server's own count of requests (apiserver_request_total), by
// verb, resource and subresource: every client's, the benchmark's own included.
type serverRequests map[string]float64

func scrapeServerRequests(b *testing.B) serverRequests {
	raw, err := env.Kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	must(b, err)
	out := serverRequests{}
	for _, line := range strings.Split(string(raw), "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(series, "apiserver_request_total{") {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		must(b, err)
		key := label(series, "verb") + " " + label(series, "resource")
		if sub := label(series, "subresource"); sub != "" {
			key += "/" + sub
		}
		out[key] += v
	}
	return out
}

// logSince logs the requests made since earlier, most first, per promotion.
func (s serverRequests) logSince(b *testing.B, earlier serverRequests, promotions int) {
	type row struct {
		key string
		n   float64
	}
	var rows []row
	for k, v := range s {
		if d := v - earlier[k]; d > 0 && !strings.HasPrefix(k, "WATCH") {
			rows = append(rows, row{k, d})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].n > rows[j].n })
	for _, r := range rows {
		b.Logf("API server requests during the wave, all clients: %-32s %8.0f, %6.2f per promotion", r.key, r.n, r.n/float64(promotions))
	}
}
