package rollbackpolicy

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/text"
)

var notNameChars = regexp.MustCompile(`[^a-z0-9-]+`)

// RevertCommitName is the name of the RevertCommit a policy creates for a bad dry SHA of an
// environment: <policy>-<env>-<bad dry SHA, 10>-<hash of policy and env, 6>. The same inputs
// always give the same name, so a create repeated after a crash finds the first one and the same
// bad dry SHA is never reverted twice; the hash keeps policy "a" on "b-c" apart from policy
// "a-b" on "c".
func RevertCommitName(policy, env, badDrySHA string) string {
	short := badDrySHA
	if len(short) > 10 {
		short = short[:10]
	}
	sum := sha256.Sum256([]byte(policy + "\x00" + env))
	suffix := "-" + short + "-" + hex.EncodeToString(sum[:])[:6]
	n := strings.Trim(notNameChars.ReplaceAllString(strings.ToLower(policy+"-"+env), "-"), "-")
	if max := 63 - len(suffix); len(n) > max {
		n = strings.Trim(n[:max], "-")
	}
	return n + suffix
}

// revertCommitFor is the RevertCommit that fire f of policy p asks for on environment env.
func revertCommitFor(p *rollbackv1alpha1.RollbackPolicy, ps *promoterv1alpha1.PromotionStrategy, env string, f *Fire) *rollbackv1alpha1.RevertCommit {
	name := RevertCommitName(p.Name, env, f.BadDrySHA)
	if f.Again {
		name = RevertCommitName(againPolicy(p.Name), env, f.BadDrySHA)
	}
	autoMerge := p.Spec.AutoMerge == nil || *p.Spec.AutoMerge
	return &rollbackv1alpha1.RevertCommit{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.Namespace, Labels: revertCommitLabels(p)},
		Spec: rollbackv1alpha1.RevertCommitSpec{
			PromotionStrategyRef:   rollbackv1alpha1.PromotionStrategyReference{Name: ps.Name},
			ActiveBranch:           env,
			BadDrySHA:              f.BadDrySHA,
			DrySHA:                 f.TargetDrySHA,
			Reason:                 text.Truncate(f.Reason, 1024),
			AutoMerge:              &autoMerge,
			RequiredCommitStatuses: p.Spec.RequiredCommitStatuses,
			BypassGates:            p.Spec.BypassGates,
			Trigger:                &rollbackv1alpha1.RollbackTrigger{Policy: p.Name, Key: f.Key, FailingSince: f.Since},
		},
	}
}

// revertCommitLabels are the policy's own labels plus its name, so a rollback-controller
// sharded by --watch-label-selector handles the RevertCommits of the policies it handles.
func revertCommitLabels(p *rollbackv1alpha1.RollbackPolicy) map[string]string {
	out := make(map[string]string, len(p.Labels)+1)
	maps.Copy(out, p.Labels)
	out[rollbackv1alpha1.PolicyLabel] = p.Name
	return out
}
