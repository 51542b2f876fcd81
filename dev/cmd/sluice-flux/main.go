// Command sluice-flux runs Flux's real source-controller and kustomize-controller (built from
// their Go modules by make testbin-flux) in the foreground against a cluster, such as the local
// control plane of `make controlplane`, after installing the Flux CRDs there. No pods and no DNS
// are needed: the artifact server listens on loopback. It also serves the bare repositories in
// <repo>/.cache/flux/git over smart HTTP with git http-backend, and writes their base URL to
// <repo>/.cache/flux/git-url, so a GitRepository can fetch from a local repository (Flux accepts
// only http, https and ssh URLs). Ctrl-C stops everything.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sluicehq/sluice/pkg/git/gittest"
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
	gitURL, stopGit, err := serveGit(dir)
	if err != nil {
		return err
	}
	defer stopGit()
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
	fmt.Printf("Artifacts are served at http://%s; logs in %s.\n", c.ArtifactAddr, dir)
	fmt.Printf("Bare repositories in %s are served at %s/<name>.git.\n\nCtrl-C stops them.\n", filepath.Join(dir, "git"), gitURL)
	<-ctx.Done()
	fmt.Println("\nstopping the Flux controllers")
	return nil
}

// serveGit serves dir/git over smart HTTP and writes the base URL to dir/git-url.
func serveGit(dir string) (string, func(), error) {
	root := filepath.Join(dir, "git")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", nil, err
	}
	// ServeWithGit serves the folder that holds the repository it is given: every repository in root.
	url, stop, err := gittest.ServeWithGit(filepath.Join(root, "any.git"))
	if err != nil {
		return "", nil, err
	}
	base := strings.TrimSuffix(url, "/any.git")
	if err := os.WriteFile(filepath.Join(dir, "git-url"), []byte(base+"\n"), 0o600); err != nil {
		stop()
		return "", nil, err
	}
	return base, stop, nil
}
