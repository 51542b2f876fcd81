// Command sluice-flux runs Flux's real source-controller and kustomize-controller (built from
// their Go modules by make testbin-flux) in the foreground against a cluster, such as the local
// control plane of `make controlplane`, after installing the Flux CRDs there. No pods and no DNS
// are needed: the artifact server listens on loopback. Ctrl-C stops both.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// The cluster is $KUBECONFIG's, else make controlplane's (<repo>/.cache/controlplane/kubeconfig).
// There is no --kubeconfig flag: controller-runtime, linked in for installing CRDs, registers one.
func main() {
	flag.Parse()
	if err := run(os.Getenv("KUBECONFIG")); err != nil {
		fmt.Fprintln(os.Stderr, "sluice-flux:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string) error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	if kubeconfig == "" {
		kubeconfig = filepath.Join(root, ".cache", "controlplane", "kubeconfig")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("read %s (is make controlplane running?): %w", kubeconfig, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	paths, err := flux.CRDPaths()
	if err != nil {
		return err
	}
	if err := (&testenv.Env{Config: cfg}).InstallCRDPaths(paths...); err != nil {
		return fmt.Errorf("install the Flux CRDs: %w", err)
	}
	dir := filepath.Join(root, ".cache", "flux")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := flux.Run(ctx, kube, kubeconfig, flux.Options{}, dir)
	if c != nil {
		defer c.Stop()
	}
	if err != nil {
		return err
	}
	fmt.Printf("source-controller and kustomize-controller %s running against %s, watching every namespace.\n", flux.ControllersVersion, cfg.Host)
	fmt.Printf("Artifacts are served at http://%s; logs in %s.\n\nCtrl-C stops them.\n", c.ArtifactAddr, dir)
	<-ctx.Done()
	fmt.Println("\nstopping the Flux controllers")
	return nil
}
