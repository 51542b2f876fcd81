package access

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
)

// ServiceAccount names a ServiceAccount.
type ServiceAccount struct{ Namespace, Name string }

func (sa ServiceAccount) String() string { return "ServiceAccount " + sa.Namespace + "/" + sa.Name }

// subject is the user the API server gives the ServiceAccount's tokens, and the groups it adds: a
// SubjectAccessReview must name both, or bindings to the groups would be missed.
func (sa ServiceAccount) subject() subject {
	user := fmt.Sprintf("system:serviceaccount:%s:%s", sa.Namespace, sa.Name)
	return newSubject(sa.String(), user,
		[]string{"system:serviceaccounts", "system:serviceaccounts:" + sa.Namespace, "system:authenticated"}, nil, nil)
}

// Person is someone as the API server knows them: a user, their groups and extras, as the UI
// impersonates them.
type Person struct {
	User   string
	Groups []string
	Extra  map[string][]string
}

// Anonymous is the identity the API server gives a request without credentials.
var Anonymous = Person{User: "system:anonymous", Groups: []string{"system:unauthenticated"}}

// subject names a person as an authenticated request of theirs is known: the API server adds
// system:authenticated to every user but system:anonymous, an impersonated one too, so a review
// must name it or bindings to it would be missed.
func (p Person) subject() subject {
	groups := slices.Clone(p.Groups)
	if p.User != Anonymous.User && !slices.Contains(groups, "system:authenticated") {
		groups = append(groups, "system:authenticated")
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range p.Extra {
		extra[k] = v
	}
	return newSubject("user "+p.User, p.User, groups, extra, &p)
}

// subject is who a review asks about, with the key its answers are remembered under.
type subject struct {
	name, user string
	groups     []string
	extra      map[string]authorizationv1.ExtraValue
	// person is set for a person, whom AsPerson can impersonate.
	person *Person
	key    string
}

// newSubject builds the key: every part length-prefixed, groups and extras sorted, so two
// subjects share answers only when they are the same user with the same groups and extras.
func newSubject(name, user string, groups []string, extra map[string]authorizationv1.ExtraValue, p *Person) subject {
	var b strings.Builder
	put := func(parts ...string) {
		b.WriteString(strconv.Itoa(len(parts)))
		for _, s := range parts {
			b.WriteString(":" + strconv.Itoa(len(s)) + ":" + s)
		}
	}
	put(user)
	sorted := slices.Clone(groups)
	slices.Sort(sorted)
	put(sorted...)
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		put(k)
		values := slices.Clone(extra[k])
		slices.Sort(values)
		put(values...)
	}
	if len(extra) == 0 {
		extra = nil
	}
	return subject{name: name, user: user, groups: groups, extra: extra, person: p, key: b.String() + "|"}
}

// requestKey is the request's part of an answer's key.
func requestKey(r Request) string {
	return strings.Join([]string{r.Verb, r.Group, r.Resource, r.Namespace, r.Name}, "\x00")
}
