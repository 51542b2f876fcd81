package testenv

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// configMapStore stands in for the API server's optimistic concurrency: a write carrying an old
// resourceVersion is refused, and "controller" writes land in between.
type configMapStore struct {
	stored        corev1.ConfigMap
	version       int
	writesBetween int
}

func (s *configMapStore) Get(context.Context, string, metav1.GetOptions) (*corev1.ConfigMap, error) {
	cm := s.stored.DeepCopy()
	cm.ResourceVersion = strconv.Itoa(s.version)
	if s.writesBetween > 0 {
		s.writesBetween--
		s.version++
	}
	return cm, nil
}

func (s *configMapStore) Update(_ context.Context, cm *corev1.ConfigMap, _ metav1.UpdateOptions) (*corev1.ConfigMap, error) {
	if cm.ResourceVersion != strconv.Itoa(s.version) {
		return nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, cm.Name, nil)
	}
	s.version++
	s.stored = *cm.DeepCopy()
	return cm, nil
}

func TestUpdateReadsAgainAfterAConflict(t *testing.T) {
	store := &configMapStore{writesBetween: 2}
	calls := 0
	updated, err := Update(context.Background(), store, "cm", func(cm *corev1.ConfigMap) {
		calls++
		cm.Data = map[string]string{"k": "v"}
	})
	require.NoError(t, err)
	assert.Equal(t, 3, calls, "two conflicts, then a write from a fresh read")
	assert.Equal(t, "v", updated.Data["k"])
	assert.Equal(t, "v", store.stored.Data["k"])
}

func TestUpdateGivesUpOnOtherErrors(t *testing.T) {
	_, err := Update[*corev1.ConfigMap](context.Background(), &failingGet{}, "cm", func(*corev1.ConfigMap) { t.Fatal("mutate without an object") })
	assert.True(t, apierrors.IsNotFound(err))
}

type failingGet struct{ configMapStore }

func (failingGet) Get(context.Context, string, metav1.GetOptions) (*corev1.ConfigMap, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "cm")
}
