package gate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRefs(t *testing.T) {
	cases := []struct {
		value     string
		namespace string
		want      []Ref
		errHas    string
	}{
		{value: "change-freeze", namespace: "apps", want: []Ref{{"apps", "change-freeze"}}},
		{value: "change-freeze, flux-system/bypass-signoff", namespace: "apps",
			want: []Ref{{"apps", "change-freeze"}, {"flux-system", "bypass-signoff"}}},
		{value: "a,apps/a,b", namespace: "apps", want: []Ref{{"apps", "a"}, {"apps", "b"}}},
		{value: "team.gates.v1", namespace: "apps", want: []Ref{{"apps", "team.gates.v1"}}},
		{value: "flux-system/freeze", namespace: "", want: []Ref{{"flux-system", "freeze"}}},
		{value: "", namespace: "apps", errHas: "is empty"},
		{value: "  ", namespace: "apps", errHas: "is empty"},
		{value: "a,,b", namespace: "apps", errHas: "entry 2"},
		{value: "a,", namespace: "apps", errHas: "extra comma"},
		{value: "freeze", namespace: "", errHas: `write "namespace/freeze"`},
		{value: "a/b/c", namespace: "apps", errHas: "more than one"},
		{value: "Freeze", namespace: "apps", errHas: `gate name "Freeze" is not valid`},
		{value: "ns_1/freeze", namespace: "apps", errHas: `namespace "ns_1" is not valid`},
		{value: "/freeze", namespace: "apps", errHas: `namespace "" is not valid`},
		{value: "apps/", namespace: "apps", errHas: `gate name "" is not valid`},
	}
	for _, tc := range cases {
		t.Run(tc.value, func(t *testing.T) {
			refs, err := ParseRefs(tc.value, tc.namespace)
			if tc.errHas != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.errHas)
				assert.Contains(t, err.Error(), GatesAnnotation, "the error names the annotation to fix")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, refs)
		})
	}
}

func TestParseRequire(t *testing.T) {
	for value, want := range map[string]Require{"": RequireAll, "all": RequireAll, " All ": RequireAll, "oneOf": RequireOneOf, "oneof": RequireOneOf} {
		got, err := ParseRequire(value)
		require.NoError(t, err, value)
		assert.Equal(t, want, got, value)
	}
	for _, value := range []string{"any", "one", "all,oneOf", "none"} {
		_, err := ParseRequire(value)
		require.Error(t, err, value)
		assert.Contains(t, err.Error(), RequireAnnotation)
		assert.Contains(t, err.Error(), `"oneOf"`)
	}
}

func FuzzParseRefs(f *testing.F) {
	for _, seed := range []string{"a", "a,b", "ns/a, b", "a,,b", "/", "a/b/c", " x ,y/z ", "Ä/ö", strings.Repeat("a", 300)} {
		f.Add(seed, "default")
		f.Add(seed, "")
	}
	f.Fuzz(func(t *testing.T, value, namespace string) {
		refs, err := ParseRefs(value, namespace)
		if err != nil {
			require.Empty(t, refs)
			require.NotEmpty(t, err.Error())
			return
		}
		require.NotEmpty(t, refs)
		// Written out qualified, the refs parse back to themselves from any namespace.
		names := make([]string, len(refs))
		seen := map[Ref]bool{}
		for i, r := range refs {
			require.NotEmpty(t, r.Namespace)
			require.NotEmpty(t, r.Name)
			require.False(t, seen[r], "duplicate %s", r)
			seen[r] = true
			names[i] = r.String()
		}
		again, err := ParseRefs(strings.Join(names, ","), "elsewhere")
		require.NoError(t, err)
		require.Equal(t, refs, again)
	})
}

func FuzzParseRequire(f *testing.F) {
	for _, seed := range []string{"", "all", "oneOf", " ONEOF ", "any", "all,oneOf", "\x00"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		got, err := ParseRequire(value)
		if err != nil {
			require.Empty(t, got)
			require.Contains(t, err.Error(), RequireAnnotation)
			return
		}
		// Whatever the spelling, the result is one of the two, and reads back as itself.
		require.Contains(t, []Require{RequireAll, RequireOneOf}, got)
		again, err := ParseRequire(string(got))
		require.NoError(t, err)
		require.Equal(t, got, again)
	})
}
