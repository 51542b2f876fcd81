package charts

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// grantsOnSecrets returns where the rendered RBAC lets the chart's ServiceAccount get Secrets:
// "*" for a ClusterRole, else each Role's namespace.
func grantsOnSecrets(t *testing.T, rendered string) []string {
	t.Helper()
	objs, err := Objects(rendered)
	require.NoError(t, err)
	var where []string
	for _, kind := range []string{"ClusterRole", "Role"} {
		for _, o := range OfKind(objs, kind) {
			var role rbacv1.ClusterRole
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role))
			for _, r := range role.Rules {
				if slices.Contains(r.APIGroups, "") && slices.Contains(r.Resources, "secrets") && slices.Contains(r.Verbs, "get") {
					if kind == "ClusterRole" {
						where = append(where, "*")
					} else {
						where = append(where, o.GetNamespace())
					}
				}
			}
		}
	}
	return where
}

// The charts whose controllers read Secrets named by ScmProviders and ScmRepositories grant get
// on Secrets nowhere by default; in the listed namespaces, or the watchNamespace, with Roles; and
// in every namespace only with secretAccess.clusterWide.
func TestSecretAccessIsNamespacedByDefault(t *testing.T) {
	helm := renderer(t)
	for _, chart := range []string{"commitstatus-controller", "promoter-controller", "rollback-controller"} {
		for _, c := range []struct {
			set  []string
			want []string
		}{
			{nil, nil},
			{[]string{"secretAccess.namespaces={apps,platform}"}, []string{"apps", "platform"}},
			{[]string{"watchNamespace=apps"}, []string{"apps"}},
			{[]string{"secretAccess.clusterWide=true"}, []string{"*"}},
			{[]string{"secretAccess.clusterWide=true", "secretAccess.namespaces={apps}"}, []string{"*"}},
		} {
			out, err := helm.Template(context.Background(), chart, "sluice-system", chartDir(t, chart), nil, c.set...)
			require.NoError(t, err, "%s %v", chart, c.set)
			assert.Equal(t, c.want, grantsOnSecrets(t, out), "%s %v", chart, c.set)
		}
	}
}
