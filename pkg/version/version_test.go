package version

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStringNamesVersionRevisionAndPlatform(t *testing.T) {
	info := Info{Version: "1.2.3", Revision: "abc123", GoVersion: "go1.26.0", Platform: "linux/arm64"}
	assert.Equal(t, "1.2.3 (abc123, go1.26.0, linux/arm64)", info.String())
	assert.Equal(t, "devel (unknown revision, go1.26.0, linux/arm64)", Info{Version: "devel", GoVersion: "go1.26.0", Platform: "linux/arm64"}.String())
}

func TestGetReportsTheStampedValues(t *testing.T) {
	oldVersion, oldRevision := Version, Revision
	t.Cleanup(func() { Version, Revision = oldVersion, oldRevision })
	Version, Revision = "9.9.9", "deadbeef"
	got := Get()
	assert.Equal(t, "9.9.9", got.Version)
	assert.Equal(t, "deadbeef", got.Revision)
	assert.Equal(t, runtime.GOOS+"/"+runtime.GOARCH, got.Platform)
}
