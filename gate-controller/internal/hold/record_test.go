package hold

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRecordRoundTrips(t *testing.T) {
	r := Record{Gates: []string{"a/b", "c/d"}, Reason: `held by gate a/b is closed ("quoted", \ and ünïcode)`, Set: []Change{ChangeAnnotation}, Yielded: true}
	got, err := ParseRecord(r.String())
	require.NoError(t, err)
	assert.Equal(t, r, got)
	_, err = ParseRecord("held")
	assert.ErrorContains(t, err, RecordAnnotation)
}

// People can edit the record annotation: any value must parse or fail cleanly, and a parsed
// record must survive a round trip, so the controller never rewrites a hold it already carries.
func FuzzParseRecord(f *testing.F) {
	f.Add(`{"gates":["a/b"],"reason":"x","set":["annotation","spec"]}`)
	f.Add(`{"yielded":true}`)
	f.Add(`null`)
	f.Add(`{"set":[1]}`)
	f.Fuzz(func(t *testing.T, value string) {
		r, err := ParseRecord(value)
		if err != nil {
			return
		}
		again, err := ParseRecord(r.String())
		require.NoError(t, err)
		require.True(t, r.equal(again), "%+v != %+v", r, again)
	})
}
