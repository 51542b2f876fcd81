package gate

import (
	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
)

// ValidateSpec reports every problem that stops a gate from being evaluated: a bad cron schedule,
// an unknown time zone, a duration that is not positive or longer than MaxWindowDuration, an unknown
// window kind or override state, or an override without an expiry. Each error names the field and
// says what to write instead. A window longer than the gap between its starts is valid: consecutive
// windows merge.
func ValidateSpec(spec gatingv1alpha1.GateSpec) error {
	_, errs := compileSpec(spec)
	return errs.ToAggregate()
}
