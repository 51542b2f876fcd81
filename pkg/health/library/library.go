// Package library holds health checks as data: the built-in library shipped
// with Sluice, and the parser for user libraries in the same format.
//
// A library is a YAML list of RFC-0009 entries:
//
//   - apiVersion: cert-manager.io/v1
//     kind: Certificate        # optional: without it the entry covers the whole API group
//     inProgress: <CEL>        # optional, evaluated first
//     failed: <CEL>            # optional, evaluated second
//     current: <CEL>           # required, evaluated last
//
// Precedence, highest first: a HealthCheck's spec, the user library, the
// built-in library. A higher source wins even with a group-wide entry; within
// one source, a kind entry overrides the group-wide entry of its group.
package library

import (
	_ "embed"
	"fmt"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/sluicehq/sluice/pkg/health"
)

//go:embed builtin.yaml
var builtinYAML []byte

var builtin = sync.OnceValues(func() ([]health.Check, error) {
	checks, err := parse(builtinYAML, health.SourceBuiltin)
	if err != nil {
		return nil, fmt.Errorf("built-in health library: %w", err)
	}
	return checks, nil
})

// Builtin returns the built-in checks. The slice is a copy the caller may
// keep or change.
func Builtin() ([]health.Check, error) {
	checks, err := builtin()
	if err != nil {
		return nil, err
	}
	return append([]health.Check(nil), checks...), nil
}

// Parse decodes a library, rejecting unknown fields, invalid entries and
// duplicates. It does not compile the expressions: use health.CompileAll.
func Parse(data []byte) ([]health.Check, error) {
	return parse(data, health.SourceUser)
}

func parse(data []byte, source health.Source) ([]health.Check, error) {
	var checks []health.Check
	if err := yaml.UnmarshalStrict(data, &checks); err != nil {
		return nil, fmt.Errorf("decoding health checks: %w", err)
	}
	if _, err := health.NewLayer(source, checks); err != nil {
		return nil, err
	}
	return checks, nil
}
