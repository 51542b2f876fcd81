// Package argocd provides the real Argo CD CRDs to tests and README examples. They come from the
// Argo CD Go module, never from copies committed here: the module's zip carries
// manifests/crds, and only those files are used; the module is not built.
package argocd

import (
	"fmt"
	"path/filepath"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sluicehq/sluice/testenv/modcache"
)

// Module and Version are where the CRDs come from. Version is the newest release this machine's
// module proxy serves that has spec.syncPolicy.automated.enabled (Argo CD 3.1 and later).
const (
	Module  = "github.com/argoproj/argo-cd/v3"
	Version = "v3.2.0"
)

// Resources of the Argo CD kinds tests use, at their storage versions.
var (
	Applications = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	AppProjects  = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}
)

// files are the CRDs taken from the module's manifests/crds; ApplicationSets are left out, as
// nothing here uses them and their CRD alone is a megabyte.
var files = []string{"application-crd.yaml", "appproject-crd.yaml"}

var (
	once  sync.Once
	paths []string
	err   error
)

// CRDPaths returns the Application and AppProject CRD files, ready for testenv.Options.CRDPaths.
// The first call on a machine downloads the module into the module cache and copies the files
// into a cache folder; later calls, from any process, reuse it. A file lock keeps parallel test
// packages from racing.
func CRDPaths() ([]string, error) {
	once.Do(func() { paths, err = cached() })
	return paths, err
}

// CacheDir is where the CRDs of Version are kept: $SLUICE_ARGOCD_CRDS, or a folder under the
// user's cache directory shared by every clone on the machine.
func CacheDir() (string, error) {
	return modcache.Dir("SLUICE_ARGOCD_CRDS", filepath.Join("argocd-crds", "argo-cd-"+Version))
}

func cached() ([]string, error) {
	dir, err := CacheDir()
	if err != nil {
		return nil, err
	}
	if err := modcache.Ensure(dir, fill); err != nil {
		return nil, fmt.Errorf("Argo CD CRDs of %s@%s: %w", Module, Version, err)
	}
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = filepath.Join(dir, f)
	}
	return out, nil
}

// fill copies the CRD files out of the module's manifests/crds into tmp.
func fill(tmp string) error {
	moduleDir, err := modcache.Download(Module, Version)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := modcache.CopyFile(filepath.Join(moduleDir, "manifests", "crds", f), filepath.Join(tmp, f)); err != nil {
			return err
		}
	}
	return nil
}
