package soak

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"
)

// FaultKind is one kind of fault the soak injects.
type FaultKind string

const (
	// KillReplica is a kill -9 of one controller replica, restarted after the fault's length.
	KillReplica FaultKind = "kill-replica"
	// DropAPIConnections closes every connection between the controllers and the API server,
	// so watches break mid-stream.
	DropAPIConnections FaultKind = "drop-api-connections"
	// StallAPI stops forwarding between the controllers and the API server for the fault's
	// length: requests hang, then go on.
	StallAPI FaultKind = "stall-api"
	// RestartAPIServer stops kube-apiserver and starts it again on the same etcd.
	RestartAPIServer FaultKind = "restart-apiserver"
	// PauseEtcd stops etcd (SIGSTOP) for the fault's length.
	PauseEtcd FaultKind = "pause-etcd"
	// RefuseGitPushes makes the git server answer 503 to every push for the fault's length.
	RefuseGitPushes FaultKind = "refuse-git-pushes"
	// SlowGit delays every git request by a second for the fault's length.
	SlowGit FaultKind = "slow-git"
	// GiteaErrors makes Gitea's proxy answer every request 502 Bad Gateway or, a second later,
	// 504 Gateway Timeout, by turns, for the fault's length: API calls, fetches and pushes.
	GiteaErrors FaultKind = "gitea-502-504"
	// SlowGitea delays every request to Gitea by two seconds for the fault's length.
	SlowGitea FaultKind = "slow-gitea"
)

// faultKinds are the kinds a schedule draws from, in a fixed order so a seed replays.
var faultKinds = []FaultKind{KillReplica, KillReplica, KillReplica, DropAPIConnections, StallAPI, RestartAPIServer, PauseEtcd, RefuseGitPushes, SlowGit}

// giteaFaultKinds are drawn as well when the run has a Gitea.
var giteaFaultKinds = []FaultKind{GiteaErrors, SlowGitea}

// Fault is one scheduled fault.
type Fault struct {
	At     time.Duration
	Kind   FaultKind
	Length time.Duration
	// Target picks the controller replica of a KillReplica (an index into the fleet).
	Target int
}

func (f Fault) String() string {
	return fmt.Sprintf("+%s %s for %s (target %d)", f.At.Truncate(time.Second), f.Kind, f.Length.Truncate(100*time.Millisecond), f.Target)
}

// Schedule draws the faults of a run of length d from seed: one every gap on average,
// starting after warmup, none in the last quiet period, each over before the next starts. The
// same seed, length and gap give the same schedule.
func Schedule(seed uint64, d, warmup, quiet, gap time.Duration, replicas int, withGitea bool) []Fault {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	kinds := faultKinds
	if withGitea {
		kinds = append(append([]FaultKind(nil), faultKinds...), giteaFaultKinds...)
	}
	var faults []Fault
	at := warmup
	for {
		at += gap/2 + time.Duration(rng.Int64N(int64(gap)))
		kind := kinds[rng.IntN(len(kinds))]
		length := time.Second + time.Duration(rng.Int64N(int64(8*time.Second)))
		if kind == RestartAPIServer {
			length = 0
		}
		if at+length > d-quiet {
			break
		}
		faults = append(faults, Fault{At: at, Kind: kind, Length: length, Target: rng.IntN(max(replicas, 1))})
		at += length
	}
	sort.Slice(faults, func(i, j int) bool { return faults[i].At < faults[j].At })
	return faults
}
