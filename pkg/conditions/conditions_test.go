package conditions

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTransitionsKeepKstatusShape(t *testing.T) {
	var conds []metav1.Condition
	MarkReconciling(&conds, 1, ReasonProgressing, "applying")
	assert.True(t, IsTrue(conds, Reconciling))
	assert.Equal(t, metav1.ConditionFalse, Get(conds, Ready).Status)

	MarkStalled(&conds, 2, ReasonInvalidSpec, "spec.windows[0].schedule: expected 5 fields")
	assert.True(t, IsTrue(conds, Stalled))
	assert.Nil(t, Get(conds, Reconciling), "Reconciling is removed once Stalled")
	assert.Equal(t, int64(2), Get(conds, Ready).ObservedGeneration)

	MarkReady(&conds, 3, ReasonSucceeded, "ok")
	assert.True(t, IsTrue(conds, Ready))
	assert.Nil(t, Get(conds, Stalled))
	assert.Nil(t, Get(conds, Reconciling))

	MarkNotReady(&conds, 3, "ScmUnavailable", "503 from the SCM; retrying")
	assert.Equal(t, metav1.ConditionFalse, Get(conds, Ready).Status)
	assert.Len(t, conds, 1)
}

func TestLongMessagesAreTruncated(t *testing.T) {
	var conds []metav1.Condition
	MarkStalled(&conds, 1, ReasonInvalidSpec, strings.Repeat("x", 10000))
	assert.Equal(t, maxMessage, utf8.RuneCountInString(Get(conds, Stalled).Message))

	// The byte cut this replaced split the 2-byte "é" at bytes 4092-4093; the API refuses invalid UTF-8.
	MarkStalled(&conds, 1, ReasonInvalidSpec, strings.Repeat("x", 4092)+strings.Repeat("é", 10))
	msg := Get(conds, Stalled).Message
	assert.True(t, utf8.ValidString(msg))
	assert.Equal(t, maxMessage, utf8.RuneCountInString(msg))
}
