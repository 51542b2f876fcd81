// Command sluice-node brings the real single-node cluster of make e2e up, or tears it down.
//
//	sluice-node up     # as root: bring the node up, print the kubeconfig, wait for Ctrl-C, tear down
//	sluice-node down   # as root: remove whatever a node left on this machine (make e2e's trap)
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicehq/sluice/e2e/harness"
	"github.com/sluicehq/sluice/e2e/node"
)

func main() {
	if len(os.Args) != 2 || (os.Args[1] != "up" && os.Args[1] != "down") {
		fmt.Fprintln(os.Stderr, "usage: sluice-node up|down")
		os.Exit(2)
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "sluice-node: a real node needs root: network links, iptables, mounts and cgroups")
		os.Exit(1)
	}
	var err error
	if os.Args[1] == "down" {
		err = down()
	} else {
		err = up()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice-node:", err)
		os.Exit(1)
	}
}

func down() error {
	lock, err := node.DefaultPaths.Lock()
	if err != nil {
		return err
	}
	defer lock.Close()
	return node.DefaultPaths.Down()
}

func up() error {
	root, err := harness.Root()
	if err != nil {
		return err
	}
	cfg, _, err := harness.NodeConfig(root)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := node.Up(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Printf("node up in %s; logs in %s\nexport KUBECONFIG=%s\nCtrl-C tears it down\n", n.BringUp, cfg.LogDir, cfg.AdminKubeconfig())
	<-ctx.Done()
	return n.Down()
}
