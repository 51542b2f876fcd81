package soak

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// controllers run with two replicas each, under leader election.
var controllers = []string{"gate-controller", "health-controller", "commitstatus-controller", "promoter-controller", "rollback-controller"}

const replicasPerController = 2

// replica is one controller process, restarted after a kill.
type replica struct {
	name    string
	index   int
	metrics string

	mu       sync.Mutex
	cmd      *exec.Cmd
	restarts int
	// exits counts the incarnations that ended on their own (a lost Lease ends a controller),
	// each restarted as a kubelet would.
	exits int
	// killed marks the incarnation the soak killed, which the fault restarts.
	killed bool
	// series holds the samples of each incarnation: a restart starts a new one.
	series [][]sample
	// cpu adds up the CPU seconds of the incarnations that ended.
	cpuEnded float64
}

// sample is what a replica's /metrics said at one time.
type sample struct {
	at         time.Time
	rss        float64
	goroutines float64
	cpu        float64
	queueDepth float64
	apiCalls   float64
	// leader: the replica holds its Lease (leader_election_master_status); a standby's queues
	// fill from its informers and drain only once it leads.
	leader bool
}

func (r *replica) String() string { return fmt.Sprintf("%s-%d", r.name, r.index) }

// controllerFlags are the flags one controller gets beyond those every controller gets.
func controllerFlags(name string, importPoll time.Duration) []string {
	if name == "commitstatus-controller" && importPoll > 0 {
		return []string{"--import-poll-interval", importPoll.String()}
	}
	return nil
}

// importPollInterval outlasts the whole run: the commitstatus-controller's import of the SCM's
// statuses polls every 2 minutes by design (a read of each tracked commit's statuses on Gitea,
// whether or not anything changed), so with the default one poll in four falls in the 30 s at
// rest. With this, every import the soak sees was asked for by a change (a strategy tracking new
// commits), and a read at rest is one nothing asked for. The margin covers setting up and the
// final fix forwards, which take minutes on a loaded machine.
func importPollInterval(cfg Config) time.Duration {
	return cfg.Duration + cfg.ConvergeWithin + scmStatusWait + restWindow + time.Hour
}

// fleet is every controller replica of the soak.
type fleet struct {
	binDir, kubeconfig, logDir, leaseNamespace string
	// importPoll is the commitstatus-controller's --import-poll-interval (see importPollInterval).
	importPoll time.Duration
	replicas   []*replica
	stopping   atomic.Bool
}

func (f *fleet) start() error {
	for _, name := range controllers {
		if _, err := os.Stat(filepath.Join(f.binDir, name)); err != nil {
			return fmt.Errorf("%s is not built in %s: run make build", name, f.binDir)
		}
		for i := 0; i < replicasPerController; i++ {
			r := &replica{name: name, index: i}
			f.replicas = append(f.replicas, r)
			if err := f.run(r); err != nil {
				return err
			}
		}
	}
	return nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func (f *fleet) run(r *replica) error {
	metrics, err := freeAddr()
	if err != nil {
		return err
	}
	probes, err := freeAddr()
	if err != nil {
		return err
	}
	log, err := os.OpenFile(filepath.Join(f.logDir, r.String()+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	args := append([]string{"--kubeconfig", f.kubeconfig, "--log-format", "text",
		"--metrics-bind-address", metrics, "--health-probe-bind-address", probes,
		"--leader-elect", "--leader-election-namespace", f.leaseNamespace,
		"--leader-election-lease-duration", "8s", "--leader-election-renew-deadline", "5s", "--leader-election-retry-period", "2s"},
		controllerFlags(r.name, f.importPoll)...)
	cmd := exec.Command(filepath.Join(f.binDir, r.name), args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return fmt.Errorf("start %s: %w", r, err)
	}
	r.mu.Lock()
	r.cmd, r.metrics, r.killed = cmd, metrics, false
	r.series = append(r.series, nil)
	r.mu.Unlock()
	go f.supervise(r, cmd, log)
	return nil
}

// supervise waits for an incarnation to end and, when it ended on its own, starts the next
// one a second later, as a kubelet restarts a container.
func (f *fleet) supervise(r *replica, cmd *exec.Cmd, log *os.File) {
	_ = cmd.Wait()
	_ = log.Close()
	r.mu.Lock()
	own := !r.killed && r.cmd == cmd
	if own {
		r.exits++
		r.endIncarnation()
	}
	r.mu.Unlock()
	if !own || f.stopping.Load() {
		return
	}
	time.Sleep(time.Second)
	if !f.stopping.Load() {
		_ = f.run(r)
	}
}

// endIncarnation adds the ended incarnation's CPU to the total; r.mu is held.
func (r *replica) endIncarnation() {
	if s := r.series[len(r.series)-1]; len(s) > 0 {
		r.cpuEnded += s[len(s)-1].cpu
	}
}

// kill sends SIGKILL to the replica and restarts it after d.
func (f *fleet) kill(ctx context.Context, r *replica, d time.Duration) error {
	r.mu.Lock()
	cmd := r.cmd
	r.killed = true
	r.endIncarnation()
	r.restarts++
	r.mu.Unlock()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(d):
	}
	return f.run(r)
}

// stop ends every replica: SIGTERM, then SIGKILL after ten seconds.
func (f *fleet) stop() {
	f.stopping.Store(true)
	for _, r := range f.replicas {
		r.mu.Lock()
		if r.cmd != nil && r.cmd.Process != nil {
			_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGTERM)
		}
		r.mu.Unlock()
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, r := range f.replicas {
		r.mu.Lock()
		cmd := r.cmd
		r.mu.Unlock()
		for cmd != nil && cmd.ProcessState == nil && time.Now().Before(deadline) {
			if syscall.Kill(cmd.Process.Pid, 0) != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if cmd != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
}

// sampleAll scrapes every replica's /metrics once.
func (f *fleet) sampleAll(ctx context.Context) {
	for _, r := range f.replicas {
		r.mu.Lock()
		addr := r.metrics
		r.mu.Unlock()
		s, err := scrape(ctx, addr)
		if err != nil {
			continue
		}
		r.mu.Lock()
		if r.metrics == addr {
			r.series[len(r.series)-1] = append(r.series[len(r.series)-1], s)
		}
		r.mu.Unlock()
	}
}

// totals adds up the queue depths and API requests of every replica, as they are now. A
// replica that does not answer (restarting) is an error.
func (f *fleet) totals(ctx context.Context) (depth, calls float64, err error) {
	for _, r := range f.replicas {
		r.mu.Lock()
		addr := r.metrics
		r.mu.Unlock()
		s, serr := scrapePatiently(ctx, addr)
		if serr != nil {
			return 0, 0, fmt.Errorf("%s does not answer: %w", r, serr)
		}
		if s.leader {
			depth += s.queueDepth
		}
		calls += s.apiCalls
	}
	return depth, calls, nil
}

// restartsAndExits adds up the fleet's kills and exits.
func (f *fleet) restartsAndExits() (restarts, exits int) {
	for _, r := range f.replicas {
		r.mu.Lock()
		restarts, exits = restarts+r.restarts, exits+r.exits
		r.mu.Unlock()
	}
	return restarts, exits
}

// scrapePatiently scrapes up to three times, two seconds apart: on a loaded machine one scrape
// can miss its five seconds while the replica runs.
func scrapePatiently(ctx context.Context, addr string) (sample, error) {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var s sample
		if s, err = scrape(ctx, addr); err == nil {
			return s, nil
		}
		if sleep(ctx, 2*time.Second) != nil {
			break
		}
	}
	return sample{}, err
}

func scrape(ctx context.Context, addr string) (sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return sample{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return sample{}, err
	}
	defer resp.Body.Close()
	s := sample{at: time.Now()}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := metricLine(line)
		if !ok {
			continue
		}
		switch name {
		case "process_resident_memory_bytes":
			s.rss = value
		case "go_goroutines":
			s.goroutines = value
		case "process_cpu_seconds_total":
			s.cpu = value
		case "workqueue_depth":
			s.queueDepth += value
		case "rest_client_requests_total":
			s.apiCalls += value
		case "leader_election_master_status":
			s.leader = s.leader || value > 0
		}
	}
	return s, sc.Err()
}

// metricLine splits a Prometheus text line into its metric name and value.
func metricLine(line string) (string, float64, bool) {
	sp := strings.LastIndexByte(line, ' ')
	if sp < 0 {
		return "", 0, false
	}
	v, err := strconv.ParseFloat(line[sp+1:], 64)
	if err != nil {
		return "", 0, false
	}
	name := line[:sp]
	if i := strings.IndexByte(name, '{'); i >= 0 {
		name = name[:i]
	}
	return name, v, true
}
