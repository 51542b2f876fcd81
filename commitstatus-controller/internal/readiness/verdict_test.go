package readiness

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/pkg/conditions"
)

func TestVerdictResult(t *testing.T) {
	res, err := Ready("ok").Result(time.Minute)
	assert.NoError(t, err)
	assert.Zero(t, res.RequeueAfter, "only the next event")

	v := Stalled("SecretNotFound", "create it")
	v.Recheck = true
	res, err = v.Result(7 * time.Minute)
	assert.NoError(t, err)
	assert.Equal(t, 7*time.Minute, res.RequeueAfter)
	res, _ = v.Result(0)
	assert.Equal(t, DefaultRecheckInterval, res.RequeueAfter)

	_, err = Verdict{State: StateNotReady, Err: errors.New("etcd is slow")}.Result(time.Minute)
	assert.EqualError(t, err, "etcd is slow", "backoff, by the queue")
}

func TestVerdictApply(t *testing.T) {
	var conds []metav1.Condition
	Stalled("InvalidURL", "fix spec.url").Apply(&conds, 2)
	assert.True(t, conditions.IsTrue(conds, conditions.Stalled))
	Verdict{State: StateWaiting, Reason: "WaitingForScmProvider"}.Apply(&conds, 2)
	assert.True(t, conditions.IsTrue(conds, conditions.Reconciling))
	assert.False(t, conditions.IsTrue(conds, conditions.Stalled))
	Ready("usable").Apply(&conds, 3)
	r := conditions.Get(conds, conditions.Ready)
	assert.Equal(t, metav1.ConditionTrue, r.Status)
	assert.Equal(t, int64(3), r.ObservedGeneration)
}
