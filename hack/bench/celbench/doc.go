// Package celbench compares pkg/health's CEL engine with Flux's
// fluxcd/pkg/runtime/cel evaluator in one test binary, on the same objects and
// the same checks. It is a module of its own, outside go.work, so that pkg
// never depends on Flux.
package celbench
