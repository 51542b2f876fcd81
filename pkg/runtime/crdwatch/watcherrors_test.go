package crdwatch

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
)

// A resource not served yet (a CRD just created) is no watch failure worth a log line; any other
// watch error still is.
func TestWatchErrorsOfAResourceNotServedAreQuiet(t *testing.T) {
	var reported []string
	prev := utilruntime.ErrorHandlers
	t.Cleanup(func() { utilruntime.ErrorHandlers = prev })
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, err error, msg string, _ ...any) {
		reported = append(reported, msg+": "+err.Error())
	}}
	notServed := fmt.Errorf("failed to list gitrepositories: %w", apierrors.NewNotFound(schema.GroupResource{Group: "source.toolkit.fluxcd.io", Resource: "gitrepositories"}, ""))
	quietWhileNotServed(context.Background(), &cache.Reflector{}, notServed)
	assert.Empty(t, reported)

	quietWhileNotServed(context.Background(), &cache.Reflector{}, errors.New("connection refused"))
	assert.Len(t, reported, 1, "other errors are reported as client-go reports them")
}
