package cel

import (
	"fmt"
	"strings"

	celgo "github.com/google/cel-go/cel"
)

// CompileError reports an expression that cannot be compiled. It names the
// expression and carries CEL's own diagnostics, so that a person can fix it
// from a status message alone.
type CompileError struct {
	// Expression is the source text that failed.
	Expression string
	// Message is CEL's diagnostic, one "line:column: problem" per issue.
	Message string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("invalid CEL expression %q: %s", e.Expression, e.Message)
}

func newCompileError(expr string, issues *celgo.Issues) *CompileError {
	var msgs []string
	for _, issue := range issues.Errors() {
		msgs = append(msgs, fmt.Sprintf("%d:%d: %s",
			issue.Location.Line(), issue.Location.Column()+1, issue.Message))
	}
	return &CompileError{Expression: expr, Message: strings.Join(msgs, "; ")}
}
