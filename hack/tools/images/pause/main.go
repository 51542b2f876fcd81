// Command pause is a pod's sandbox container: the first process of the pod, which holds its
// namespaces open while the other containers come and go. As PID 1 it reaps the orphaned
// processes the kernel hands it, and it exits 0 on SIGINT or SIGTERM. Set its image as
// containerd's sandbox_image.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Stamped by hack/tools/images with -ldflags -X.
var (
	version  = "devel"
	revision = ""
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "-v" || os.Args[1] == "--version") {
		fmt.Println("pause", version, revision)
		return
	}
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "pause takes no arguments but -v")
		os.Exit(2)
	}
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	// Said once the signals are this process's to handle: the Go runtime catches SIGTERM from its
	// start, but kills the process on it until Notify, so the handler mask alone proves nothing.
	fmt.Fprintln(os.Stderr, "pause: waiting for SIGTERM")
	for sig := range signals {
		if sig == syscall.SIGCHLD {
			reap()
			continue
		}
		fmt.Fprintf(os.Stderr, "pause: shutting down on %s\n", sig)
		os.Exit(0)
	}
}

// reap collects every child that has exited, so none stays a zombie. Signals merge, so one
// SIGCHLD may stand for several children.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
