// Command sluice-controlplane runs the local control plane (kube-apiserver + etcd built from Go
// modules, with the Sluice CRDs) in the foreground and writes a kubeconfig for kubectl. Ctrl-C
// stops it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/sluicehq/sluice/testenv"
)

func main() {
	kubeconfig := flag.String("kubeconfig-out", "", "Where to write the kubeconfig (default <repo>/.cache/controlplane/kubeconfig).")
	flag.Parse()
	if err := run(*kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, "sluice-controlplane:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string) error {
	if kubeconfig == "" {
		root, err := testenv.RepoRoot()
		if err != nil {
			return err
		}
		kubeconfig = filepath.Join(root, ".cache", "controlplane", "kubeconfig")
	}
	if err := os.MkdirAll(filepath.Dir(kubeconfig), 0o700); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		return err
	}
	defer env.Stop()
	if err := testenv.WriteKubeconfig(env.Config, kubeconfig); err != nil {
		return err
	}
	fmt.Printf("Local control plane running at %s with the Sluice CRDs.\n\n", env.Config.Host)
	// The same folder holds kubectl and helm, built by make testbin.
	fmt.Printf("  export KUBECONFIG=%s\n  export PATH=\"%s:$PATH\"\n  kubectl get crds\n\nCtrl-C stops it.\n", kubeconfig, env.BinDir)
	<-ctx.Done()
	fmt.Println("\nstopping the control plane")
	return nil
}
