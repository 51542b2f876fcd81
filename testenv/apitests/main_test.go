// Package apitests tests the API types of the api module: offline against the generated CRDs
// (schema and CEL rules, as the API server runs them) and on a real API server where a rule
// needs one. The tests live here so that the api module depends only on apimachinery and
// client-go.
package apitests

import (
	"fmt"
	"os"
	"testing"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	"github.com/sluicehq/sluice/testenv"
)

var client sluice.Interface

// The CEL rules and patterns are enforced by a real API server, so they are tested against one.
func TestMain(m *testing.M) {
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	client = env.Sluice
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}
