package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Every CRD in pkg/crds must be accepted by the real API server: CEL rules within the cost
// budget, valid schemas, and served so kubectl can use them through the written kubeconfig.
func TestControlPlaneServesEverySluiceCRD(t *testing.T) {
	SkipIfShort(t)
	env, err := Start(Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })

	root, err := RepoRoot()
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(root, "api", "crds", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)

	kubectl, err := Tool("kubectl")
	require.NoError(t, err)
	cmd := exec.Command(kubectl, "api-resources", "--categories=sluice", "-o", "name")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	served := strings.Fields(string(out))
	assert.Len(t, served, len(files), "every CRD file is served under the sluice category: %v", served)

	_, err = env.Kube.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	assert.NoError(t, err)
}

func TestImpersonatedClientsAreAuthorizedByRBAC(t *testing.T) {
	SkipIfShort(t)
	env, err := Start(Options{WithoutSluiceCRDs: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	kube, err := kubernetes.NewForConfig(env.Impersonate("default", "nobody"))
	require.NoError(t, err)
	_, err = kube.CoreV1().Secrets("default").List(context.Background(), metav1.ListOptions{})
	assert.ErrorContains(t, err, "forbidden", "RBAC authorizes the API server: a ServiceAccount without roles is denied")
}
