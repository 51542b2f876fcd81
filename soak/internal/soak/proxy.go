package soak

import (
	"cmp"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// tcpProxy forwards connections from its own loopback address to a target, and can drop every
// connection it carries or stall them: the faults a network between a controller and the API
// server makes.
type tcpProxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	conns   map[net.Conn]bool
	stalled chan struct{} // closed while forwarding runs; replaced by an open one during a stall
}

func newTCPProxy(target string) (*tcpProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]bool{}, stalled: closedChan()}
	go p.serve()
	return p, nil
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) close() {
	_ = p.ln.Close()
	p.dropAll()
}

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *tcpProxy) forward(client net.Conn) {
	p.waitStall()
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		_ = client.Close()
		return
	}
	p.track(client, server)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				p.waitStall()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	_ = client.Close()
	_ = server.Close()
	p.untrack(client, server)
}

func (p *tcpProxy) track(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		p.conns[c] = true
	}
}

func (p *tcpProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
	}
}

func (p *tcpProxy) waitStall() {
	p.mu.Lock()
	c := p.stalled
	p.mu.Unlock()
	<-c
}

// dropAll closes every connection the proxy carries now.
func (p *tcpProxy) dropAll() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.conns)
	for c := range p.conns {
		_ = c.Close()
	}
	return n
}

// stall stops forwarding for d.
func (p *tcpProxy) stall(d time.Duration) {
	p.mu.Lock()
	release := make(chan struct{})
	p.stalled = release
	p.mu.Unlock()
	time.AfterFunc(d, func() {
		p.mu.Lock()
		p.stalled = closedChan()
		p.mu.Unlock()
		close(release)
	})
}

// gitFaults wraps the git server: pushes refused (503) or every request slowed, for a while.
type gitFaults struct {
	next        http.Handler
	refuseUntil atomic.Int64
	slowUntil   atomic.Int64
	failUntil   atomic.Int64
	failed      atomic.Int64
	// delay is how long a request waits while slowed; a second when zero.
	delay       time.Duration
	refused     atomic.Int64
	requests    atomic.Int64
	lastRequest atomic.Int64

	mu     sync.Mutex
	recent []seenRequest
}

// seenRequest is one request through a proxy, as a violation of "no git request at rest" names it.
type seenRequest struct {
	at   time.Time
	line string
}

// remember keeps the last requests, named in a violation of "no git request at rest".
func (g *gitFaults) remember(r *http.Request) {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.recent = append(g.recent, seenRequest{now, fmt.Sprintf("%s %s %s?%s (%s)", now.Format("15:04:05.000"), r.Method, r.URL.Path, r.URL.RawQuery, r.UserAgent())})
	if len(g.recent) > 20 {
		g.recent = g.recent[len(g.recent)-20:]
	}
}

// lastSince is the last n requests at or after since: those of the rest window only, so the
// requests just before it (the final fix forwards' pushes) are not named as made at rest.
func (g *gitFaults) lastSince(since time.Time, n int) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, q := range g.recent {
		if !q.at.Before(since) {
			out = append(out, q.line)
		}
	}
	return out[max(0, len(out)-n):]
}

func (g *gitFaults) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now().UnixNano()
	g.requests.Add(1)
	g.lastRequest.Store(now)
	g.remember(r)
	if now < g.slowUntil.Load() {
		time.Sleep(cmp.Or(g.delay, time.Second))
	}
	if now < g.failUntil.Load() {
		// By turns a gateway that cannot reach its upstream, and one that gave up waiting.
		if g.failed.Add(1)%2 == 0 {
			http.Error(w, "the soak's gateway: bad gateway", http.StatusBadGateway)
			return
		}
		time.Sleep(time.Second)
		http.Error(w, "the soak's gateway: gateway timeout", http.StatusGatewayTimeout)
		return
	}
	if now < g.refuseUntil.Load() && (r.URL.Query().Get("service") == "git-receive-pack" || hasSuffix(r.URL.Path, "/git-receive-pack")) {
		g.refused.Add(1)
		http.Error(w, "the soak refuses pushes for a while", http.StatusServiceUnavailable)
		return
	}
	g.next.ServeHTTP(w, r)
}

func hasSuffix(s, suffix string) bool {
	return len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix
}

func (g *gitFaults) refuseFor(d time.Duration) { g.refuseUntil.Store(time.Now().Add(d).UnixNano()) }
func (g *gitFaults) slowFor(d time.Duration)   { g.slowUntil.Store(time.Now().Add(d).UnixNano()) }
func (g *gitFaults) failFor(d time.Duration)   { g.failUntil.Store(time.Now().Add(d).UnixNano()) }
