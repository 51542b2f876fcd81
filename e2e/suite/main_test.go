// Package suite is the end-to-end suite of make e2e: Sluice's charts installed with helm from
// Sluice's own images on a real single-node cluster (package node), run as pods under their
// charts' security context, probes and RBAC. It needs root; see docs/e2e.md.
package suite

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluicehq/sluice/e2e/harness"
	"github.com/sluicehq/sluice/e2e/node"
)

// cluster is the one node of the run, shared by every test.
var cluster *Cluster

const requirement = `the end-to-end suite brings up a real single-node Kubernetes cluster and needs root
(network links, iptables, mounts, cgroups) and Debian's containerd, runc, containernetworking-plugins,
iptables and conntrack. Run it with: sudo make e2e (docs/e2e.md)`

func TestMain(m *testing.M) {
	flag.Parse()
	// testenv's CRD installer logs through controller-runtime, which otherwise complains.
	ctrllog.SetLogger(logr.Discard())
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, requirement)
		os.Exit(1)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := harness.Root()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg, images, err := harness.NodeConfig(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	n, err := node.Up(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bring the node up:", err)
		return 1
	}
	var once sync.Once
	down := func() (err error) {
		once.Do(func() { err = n.Down() })
		return err
	}
	// A Ctrl-C or a kill still tears the node down (make e2e's trap also runs sluice-node down).
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-signals
		fmt.Fprintln(os.Stderr, "interrupted: tearing the node down")
		_ = down()
		os.Exit(1)
	}()
	code := 1
	if cluster, err = newCluster(root, n, images); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		figures.add("node bring-up, from nothing to a Ready node", n.BringUp)
		code = m.Run()
		cluster.close()
		figures.print(os.Stdout)
	}
	if err := down(); err != nil {
		fmt.Fprintln(os.Stderr, "tear the node down:", err)
		code = 1
	}
	return code
}
