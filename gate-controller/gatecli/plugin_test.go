package gatecli

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/pkg/actions"
	"github.com/sluicehq/sluice/pkg/suspend"
)

func run(args ...string) (string, error) {
	var out bytes.Buffer
	cmd := NewAliasCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestUsageReadsKubectlGate(t *testing.T) {
	out, err := run("--help")
	require.NoError(t, err)
	assert.Contains(t, out, "Usage:\n  kubectl gate [command]")
	assert.NotContains(t, out, "kubectl-gate")
	assert.Contains(t, out, "Exit codes:")

	out, err = run("open", "--help")
	require.NoError(t, err)
	assert.Contains(t, out, "kubectl gate open (NAME... | --all | -l SELECTOR)")
	out, err = run("resume", "--help")
	require.NoError(t, err)
	assert.Contains(t, out, "--wait duration[=1m]")
}

func TestUsageErrorsExitWithTwo(t *testing.T) {
	for _, args := range [][]string{
		{"open"},
		{"open", "--bogus"},
		{"close", "prod", "--for", "-1h"},
		{"close", "prod", "--all"},
		{"open", "--all", "-l", "a=b"},
		{"list", "extra"},
		{"list", "-o", "table"},
		{"close", "prod", "-A"},
		{"open", "prod", "-m", "a message an open gate would not show"},
		{"suspend", "ks/apps", "-A"},
		{"suspend"},
		{"suspend", "kustomizations"},
		{"suspend", "ks/apps", "--all"},
		{"resume", "ks", "--all", "-l", "a=b"},
		{"approve", "prod"},
		{"approve", "prod", "--revision", " "},
		{"approve", "prod", "--revision", "6.0.1", "--for", "-1h"},
		{"approve", "prod", "--revision", "6.0.1", "-A"},
		{"approve", "--revision", "6.0.1"},
	} {
		_, err := run(args...)
		require.Error(t, err, args)
		assert.Equal(t, ExitUsage, ExitCode(err), "%v: %v", args, err)
	}
}

func TestExitCode(t *testing.T) {
	assert.Equal(t, ExitOK, ExitCode(nil))
	assert.Equal(t, ExitFailed, ExitCode(errors.New("forbidden")))
	assert.Equal(t, ExitUnconfirmed, ExitCode(tally{unconfirmed: 1, total: 2}.err()))
	assert.Equal(t, ExitFailed, ExitCode(tally{failed: 1, unconfirmed: 1, total: 2}.err()), "a failure wins over an unconfirmed change")
	assert.NoError(t, tally{total: 3}.err())
}

func TestResumePatchUndoesWhatSuspends(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"suspend": true}}}
	u.SetAnnotations(map[string]string{suspend.Annotation: "why"})
	patch, undone := actions.ResumePatch(u)
	assert.Equal(t, map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{suspend.Annotation: nil}},
		"spec":     map[string]any{"suspend": nil},
	}, patch)
	assert.Equal(t, "the reconcile.fluxcd.io/suspended annotation and spec.suspend", undone)

	plain := &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"k": "v"}}}
	patch, _ = actions.ResumePatch(plain)
	assert.Nil(t, patch, "a ConfigMap gets no spec")
}

func TestStillSuspendedNamesWhatSuspends(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	assert.Empty(t, stillSuspended(u))
	u.Object["status"] = map[string]any{"conditions": []any{map[string]any{
		"type": "Suspended", "status": "True", "reason": "SuspendedByAnnotation", "message": "x", "lastTransitionTime": "2025-01-01T00:00:00Z",
	}}}
	assert.Contains(t, stillSuspended(u), "still reports Suspended")
	u.Object["spec"] = map[string]any{"suspend": true}
	assert.Contains(t, stillSuspended(u), "spec.suspend")
}

func TestListPrintsWideAndNameAndCapsTheMessage(t *testing.T) {
	now := time.Date(2025, 6, 13, 16, 0, 0, 0, time.UTC)
	long := strings.Repeat("sign-off pending ", 20)
	changed := metav1.NewTime(now.Add(-time.Hour))
	list := &gatingv1alpha1.GateList{Items: []gatingv1alpha1.Gate{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "prod"},
		Spec:       gatingv1alpha1.GateSpec{Closed: true, Message: long},
		Status: gatingv1alpha1.GateStatus{Reason: gatingv1alpha1.ReasonManual, Message: long, LastTransitionTime: &changed, Approved: "main@sha1:aaaaaaaaaaaa",
			Conditions: []metav1.Condition{{Type: gatingv1alpha1.ConditionOpen, Status: metav1.ConditionFalse}}},
	}}}

	var table bytes.Buffer
	require.NoError(t, printList(&table, list, "", false, now))
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	require.Len(t, lines, 2)
	assert.Contains(t, lines[1], "prod")
	assert.Contains(t, lines[1], "...")
	assert.Less(t, len(lines[1]), len(long), "the MESSAGE column is capped")

	var wide bytes.Buffer
	require.NoError(t, printList(&wide, list, "wide", true, now))
	assert.Contains(t, wide.String(), "LAST CHANGE")
	assert.Contains(t, wide.String(), "60m ago")
	assert.Contains(t, wide.String(), "APPROVED")
	assert.Contains(t, wide.String(), "main@sha1:aaaaaaaaaaaa", "-o wide shows the approved revisions")
	assert.NotContains(t, table.String(), "APPROVED", "the narrow table keeps its columns")
	assert.Contains(t, wide.String(), strings.TrimSpace(long), "-o wide prints the whole message")
	assert.True(t, strings.HasPrefix(wide.String(), "NAMESPACE"))

	var names bytes.Buffer
	require.NoError(t, printList(&names, list, "name", false, now))
	assert.Equal(t, "gate.gating.sluice.dev/prod\n", names.String())
}

// -v is kubectl's verbosity, not taken by any command.
func TestVerbosityFlagIsKubectls(t *testing.T) {
	cmd := NewAliasCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	for _, verb := range []string{"list", "open", "close", "suspend", "resume", "approve"} {
		sub, _, err := cmd.Find([]string{verb})
		require.NoError(t, err)
		require.NoError(t, sub.ParseFlags([]string{"-v=6"}), verb)
		assert.Equal(t, "6", sub.Flag("v").Value.String(), verb)
	}
}

func TestSluiceGateNamesItselfInHelpAndHints(t *testing.T) {
	var out bytes.Buffer
	cmd := NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	cmd.SetArgs([]string{"close", "--help"})
	require.NoError(t, cmd.Execute())
	assert.Contains(t, out.String(), "kubectl sluice gate close (NAME... | --all | -l SELECTOR)")
	assert.Contains(t, out.String(), "  kubectl sluice gate close prod -m \"reason\"")
	assert.NotContains(t, out.String(), "kubectl gate ")
}
