package gitdiff

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/snapshot"
)

func TestObjectsDiffsEachObjectWhateverItsFileOrKeyOrder(t *testing.T) {
	from := []snapshot.File{{Name: "all.yaml", Data: []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec: {replicas: 2, template: {spec: {containers: [{name: web, image: "web:1"}]}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: old, namespace: shop}
data: {a: "1"}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {ports: [{port: 80}]}
`)}}
	to := []snapshot.File{
		{Name: "deploy.yaml", Data: []byte(`kind: Deployment
apiVersion: apps/v1
metadata: {namespace: shop, name: web}
spec: {template: {spec: {containers: [{name: web, image: "web:2"}]}}, replicas: 2}
`)},
		{Name: "svc.yaml", Data: []byte("apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {ports: [{port: 80}]}\n")},
		{Name: "new.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: new, namespace: shop}\n")},
	}
	res, err := Objects(context.Background(), from, to, Limits{})
	require.NoError(t, err)
	var names, statuses []string
	for _, f := range res.Files {
		names, statuses = append(names, f.Name), append(statuses, f.Status)
	}
	assert.Equal(t, []string{"ConfigMap/shop/new", "ConfigMap/shop/old", "Deployment.apps/shop/web"}, names, "the Service moved file but did not change")
	assert.Equal(t, []string{"added", "deleted", "modified"}, statuses)
	web := res.Files[2]
	assert.Contains(t, web.Lines, Line{Kind: "del", Text: "-      - image: web:1"})
	assert.Contains(t, web.Lines, Line{Kind: "add", Text: "+      - image: web:2"})
	assert.NotContains(t, web.Lines, Line{Kind: "add", Text: "+  replicas: 2"}, "key order is no change")
}

func TestObjectsAreBoundedLikeFiles(t *testing.T) {
	var to []snapshot.File
	for _, n := range []string{"a", "b", "c"} {
		to = append(to, snapshot.File{Name: n + ".yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + n + "}\ndata: {x: " + strings.Repeat("y", 100) + "}\n")})
	}
	res, err := Objects(context.Background(), nil, to, Limits{Files: 2})
	require.NoError(t, err)
	assert.Len(t, res.Files, 2)
	assert.Equal(t, 1, res.Omitted)
	res, err = Objects(context.Background(), nil, to, Limits{FileBytes: 50})
	require.NoError(t, err)
	assert.True(t, res.Files[0].TooLarge)
}
