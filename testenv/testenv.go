// Package testenv runs the real local control plane, kube-apiserver and etcd built from Go
// modules, with the Sluice CRDs installed. Tests, the demo and `make controlplane` all use it.
// The API server authorizes with RBAC, so tests can prove a chart's permissions by impersonation.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
)

// Options choose what is installed besides the Sluice CRDs.
type Options struct {
	// CRDs are extra CustomResourceDefinitions to install, such as Flux's or a test's own.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// CRDPaths are extra files or folders of CRD YAML to install.
	CRDPaths []string
	// WithoutSluiceCRDs skips api/crds, to test a controller whose peer CRDs are missing.
	WithoutSluiceCRDs bool
	// SluiceCRDs installs only these files of api/crds (e.g. "gating.sluice.dev_gates.yaml")
	// instead of all of them, so a test does not depend on other groups being valid.
	SluiceCRDs []string
}

// Env is a running control plane with admin clients.
type Env struct {
	Config  *rest.Config
	Kube    kubernetes.Interface
	Sluice  sluice.Interface
	Dynamic dynamic.Interface
	// Kubeconfig is the path of an admin kubeconfig file for kubectl, helm and controller processes.
	Kubeconfig string
	// BinDir holds kube-apiserver, etcd, kubectl and helm.
	BinDir string

	env        *envtest.Environment
	dir        string
	stopReaper func()
}

// Start builds the binaries if this machine has never built them, then starts the control plane.
func Start(opts Options) (*Env, error) {
	bin, err := Binaries()
	if err != nil {
		return nil, err
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	paths := append([]string(nil), opts.CRDPaths...)
	crds := filepath.Join(root, "api", "crds")
	switch {
	case len(opts.SluiceCRDs) > 0:
		for _, name := range opts.SluiceCRDs {
			paths = append(paths, filepath.Join(crds, name))
		}
	case !opts.WithoutSluiceCRDs:
		paths = append(paths, crds)
	}
	te := &envtest.Environment{
		BinaryAssetsDirectory:    bin,
		CRDDirectoryPaths:        paths,
		CRDs:                     opts.CRDs,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	cfg, err := te.Start()
	if err != nil {
		return nil, fmt.Errorf("start local control plane from %s: %w", bin, err)
	}
	e := &Env{Config: cfg, BinDir: bin, env: te, stopReaper: startReaper()}
	if err := e.init(); err != nil {
		_ = e.Stop()
		return nil, err
	}
	return e, nil
}

func (e *Env) init() error {
	var err error
	if e.Kube, err = kubernetes.NewForConfig(e.Config); err != nil {
		return err
	}
	if e.Sluice, err = sluice.NewForConfig(e.Config); err != nil {
		return err
	}
	if e.Dynamic, err = dynamic.NewForConfig(e.Config); err != nil {
		return err
	}
	if e.dir, err = os.MkdirTemp("", "sluice-testenv-"); err != nil {
		return err
	}
	e.Kubeconfig = filepath.Join(e.dir, "kubeconfig")
	return WriteKubeconfig(e.Config, e.Kubeconfig)
}

// Stop stops the control plane and removes its files.
func (e *Env) Stop() error {
	err := e.env.Stop()
	if e.stopReaper != nil {
		e.stopReaper()
	}
	if e.dir != "" {
		err = errors.Join(err, os.RemoveAll(e.dir))
	}
	return err
}

// InstallCRDs installs more CRDs and waits until they are served.
func (e *Env) InstallCRDs(crds ...*apiextensionsv1.CustomResourceDefinition) error {
	_, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{CRDs: crds, MaxTime: time.Minute})
	return err
}

// InstallCRDPaths installs CRDs from YAML files or folders and waits until they are served.
func (e *Env) InstallCRDPaths(paths ...string) error {
	_, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true, MaxTime: time.Minute})
	return err
}
