package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/gate-controller/gatecli"
)

func TestAliasSaysItIsDeprecatedOnStderrAndRunsTheGateCommands(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"--help"}, strings.NewReader(""), &out, &errOut)
	assert.Equal(t, gatecli.ExitOK, code)
	assert.Equal(t, deprecation, errOut.String(), "the note goes to stderr alone")
	assert.Contains(t, out.String(), "Usage:\n  kubectl gate [command]")

	out.Reset()
	errOut.Reset()
	code = run([]string{"close"}, strings.NewReader(""), &out, &errOut)
	assert.Equal(t, gatecli.ExitUsage, code, "the same exit codes")
	assert.True(t, strings.HasPrefix(errOut.String(), deprecation))
	assert.Contains(t, errOut.String(), "error: name at least one gate")
}
