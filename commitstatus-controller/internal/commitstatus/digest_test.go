package commitstatus

import (
	"reflect"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
)

func sampleDesired() Desired {
	return Desired{
		Endpoint:    "github https://github.example.com",
		Repository:  "acme/app",
		SHA:         sha,
		Name:        "sluice/health",
		Phase:       "success",
		Description: "healthy",
		URL:         "https://dash.example.com",
	}
}

func TestDigestIsStableAndVersioned(t *testing.T) {
	d := sampleDesired()
	assert.Equal(t, d.Digest(), sampleDesired().Digest())
	assert.Regexp(t, regexp.MustCompile(`^v1:[0-9a-f]{64}$`), d.Digest())
}

// Every field takes part: a change of any of them means the SCM must be told.
func TestEveryFieldChangesTheDigest(t *testing.T) {
	base := sampleDesired()
	v := reflect.ValueOf(&base).Elem()
	for i := range v.NumField() {
		changed := sampleDesired()
		field := reflect.ValueOf(&changed).Elem().Field(i)
		field.SetString(field.String() + "x")
		assert.NotEqual(t, base.Digest(), changed.Digest(), "field %s", v.Type().Field(i).Name)
	}
}

// Moving text from one field to the next must not produce the same digest.
func TestFieldBoundariesAreUnambiguous(t *testing.T) {
	a, b := sampleDesired(), sampleDesired()
	a.Description, a.URL = "healthy;", "https://dash.example.com"
	b.Description, b.URL = "healthy", ";https://dash.example.com"
	assert.NotEqual(t, a.Digest(), b.Digest())
}
