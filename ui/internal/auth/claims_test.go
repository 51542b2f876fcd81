package auth

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/ui/internal/web"
)

func TestClaimsMapAsTheAPIServerMapsThem(t *testing.T) {
	const issuer = "https://idp.example.com"
	tests := []struct {
		name    string
		mapping Claims
		claims  map[string]any
		want    web.Identity
		refused string
	}{{
		name:    "sub takes the issuer as its default prefix",
		mapping: Claims{Issuer: issuer},
		claims:  map[string]any{"sub": "1234"},
		want:    web.Identity{User: issuer + "#1234", Impersonate: true},
	}, {
		name:    "email has no default prefix",
		mapping: Claims{Issuer: issuer, UsernameClaim: "email", GroupsClaim: "groups"},
		claims:  map[string]any{"email": "alice@example.com", "email_verified": true, "groups": []any{"team-a", "devs"}},
		want:    web.Identity{User: "alice@example.com", Groups: []string{"team-a", "devs"}, Impersonate: true},
	}, {
		name:    "an unverified email is refused",
		mapping: Claims{Issuer: issuer, UsernameClaim: "email"},
		claims:  map[string]any{"email": "mallory@example.com", "email_verified": false},
		refused: "not verified",
	}, {
		name:    "- means no prefix; prefixes apply to every group; a single group may be a string",
		mapping: Claims{Issuer: issuer, UsernameClaim: "preferred_username", UsernamePrefix: "-", GroupsClaim: "groups", GroupsPrefix: "oidc:"},
		claims:  map[string]any{"preferred_username": "alice", "groups": "team-a"},
		want:    web.Identity{User: "alice", Groups: []string{"oidc:team-a"}, Impersonate: true},
	}, {
		name:    "an explicit prefix",
		mapping: Claims{Issuer: issuer, UsernameClaim: "preferred_username", UsernamePrefix: "oidc:"},
		claims:  map[string]any{"preferred_username": "alice"},
		want:    web.Identity{User: "oidc:alice", Impersonate: true},
	}, {
		name:    "a system: user is refused",
		mapping: Claims{Issuer: issuer, UsernameClaim: "preferred_username", UsernamePrefix: "-"},
		claims:  map[string]any{"preferred_username": "system:admin"},
		refused: "reserved system: space",
	}, {
		name:    "a system: group is dropped, with or without a prefix that makes one",
		mapping: Claims{Issuer: issuer, UsernameClaim: "preferred_username", UsernamePrefix: "-", GroupsClaim: "groups"},
		claims:  map[string]any{"preferred_username": "alice", "groups": []any{"system:masters", "team-a", ""}},
		want:    web.Identity{User: "alice", Groups: []string{"team-a"}, Impersonate: true},
	}, {
		name:    "a prefix cannot be made into system: by the provider",
		mapping: Claims{Issuer: issuer, UsernameClaim: "preferred_username", UsernamePrefix: "-", GroupsClaim: "groups", GroupsPrefix: "system"},
		claims:  map[string]any{"preferred_username": "alice", "groups": []any{":masters"}},
		want:    web.Identity{User: "alice", Impersonate: true},
	}, {
		name:    "a missing user claim is refused",
		mapping: Claims{Issuer: issuer, UsernameClaim: "preferred_username"},
		claims:  map[string]any{"sub": "1234"},
		refused: `no "preferred_username" claim`,
	}, {
		name:    "a group that is not a string is refused",
		mapping: Claims{Issuer: issuer, GroupsClaim: "groups"},
		claims:  map[string]any{"sub": "1234", "groups": []any{"a", 7.0}},
		refused: "not a string",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.mapping.Identity(tt.claims)
			if tt.refused != "" {
				assert.ErrorContains(t, err, tt.refused)
				assert.Empty(t, got.User)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
