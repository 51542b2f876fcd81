package gate

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sluicehq/sluice/pkg/text"
)

// Annotations that make any object a target of gates.
const (
	// GatesAnnotation lists the gates an object waits for: "name[,namespace/name...]".
	// A name without a namespace is in the object's namespace.
	GatesAnnotation = "gating.sluice.dev/gates"
	// RequireAnnotation says how many of them must be open: "all" (the default) or "oneOf".
	RequireAnnotation = "gating.sluice.dev/require"
	// HoldAnnotation is the gate-controller's record of a hold it placed on an object: present
	// with reconcile.fluxcd.io/suspended, the object is held by its gates.
	HoldAnnotation = "gating.sluice.dev/hold"
)

// Ref names a Gate.
type Ref struct {
	Namespace string
	Name      string
}

func (r Ref) String() string { return r.Namespace + "/" + r.Name }

// Require says how many referenced gates must be open.
type Require string

const (
	// RequireAll needs every referenced gate open.
	RequireAll Require = "all"
	// RequireOneOf needs at least one referenced gate open, e.g. a bypass sign-off beside a freeze.
	RequireOneOf Require = "oneOf"
)

// ParseRefs reads the value of GatesAnnotation. Names without a namespace are placed in
// defaultNamespace, the target's own namespace (empty for cluster-scoped targets). Spaces around
// entries are ignored and repeated gates are listed once.
func ParseRefs(value, defaultNamespace string) ([]Ref, error) {
	if strings.TrimSpace(value) == "" {
		return nil, fmt.Errorf("%s is empty; list gates as \"name\" or \"namespace/name\", separated by commas", GatesAnnotation)
	}
	entries := strings.Split(value, ",")
	refs := make([]Ref, 0, len(entries))
	seen := make(map[Ref]bool, len(entries))
	var problems []string
	for i, entry := range entries {
		ref, err := parseRef(strings.TrimSpace(entry), defaultNamespace)
		if err != nil {
			problems = append(problems, fmt.Sprintf("entry %d %q %v", i+1, text.TruncateBytes(strings.TrimSpace(entry), 64), err))
			continue
		}
		if !seen[ref] {
			seen[ref] = true
			refs = append(refs, ref)
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s: %s", GatesAnnotation, listSome(problems, maxListed))
	}
	return refs, nil
}

// maxListed bounds the problems a message lists; the rest are counted.
const maxListed = 10

// listSome joins at most n items and counts the others, so one bad annotation with thousands of
// entries cannot make a message of unbounded size.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(items[:n], "; "), len(items)-n)
}

func parseRef(entry, defaultNamespace string) (Ref, error) {
	if entry == "" {
		return Ref{}, fmt.Errorf("is empty; remove the extra comma")
	}
	ref := Ref{Namespace: defaultNamespace, Name: entry}
	if ns, name, qualified := strings.Cut(entry, "/"); qualified {
		if strings.Contains(name, "/") {
			return Ref{}, fmt.Errorf("has more than one \"/\"; write \"namespace/name\"")
		}
		ref = Ref{Namespace: ns, Name: name}
	} else if defaultNamespace == "" {
		return Ref{}, fmt.Errorf("has no namespace and the object is cluster-scoped; write \"namespace/%s\"", entry)
	}
	if errs := validation.IsDNS1123Label(ref.Namespace); len(errs) > 0 {
		return Ref{}, fmt.Errorf("namespace %q is not valid: %s", ref.Namespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(ref.Name); len(errs) > 0 {
		return Ref{}, fmt.Errorf("gate name %q is not valid: %s", ref.Name, strings.Join(errs, "; "))
	}
	return ref, nil
}

// ParseRequire reads the value of RequireAnnotation. Empty means RequireAll; case does not matter.
func ParseRequire(value string) (Require, error) {
	switch v := strings.TrimSpace(value); {
	case v == "" || strings.EqualFold(v, string(RequireAll)):
		return RequireAll, nil
	case strings.EqualFold(v, string(RequireOneOf)):
		return RequireOneOf, nil
	default:
		return "", fmt.Errorf("%s is %q; use \"all\" (every gate must be open) or \"oneOf\" (at least one gate must be open)", RequireAnnotation, value)
	}
}
