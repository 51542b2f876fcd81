package gatecli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/dynamic"

	"github.com/sluicehq/sluice/gate-controller/internal/hold"
	"github.com/sluicehq/sluice/gate-controller/internal/kinds"
	"github.com/sluicehq/sluice/pkg/actions"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// DefaultSuspendReason is the annotation's value when suspend is given no message: a sentence a
// person reads in the object's status, rather than a bare "true".
const DefaultSuspendReason = "suspended with kubectl sluice gate suspend; no reason was given"

// selection names the objects a command acts on.
type selection struct {
	all      bool
	selector string
}

func newSuspendCommand(o *options) *cobra.Command {
	var (
		message string
		sel     selection
	)
	cmd := &cobra.Command{
		Use:   "suspend (KIND/NAME... | KIND --all | KIND -l SELECTOR)",
		Short: "Suspend any object with a reason, through reconcile.fluxcd.io/suspended (and spec.suspend on Flux kinds)",
		Long: `Suspend any object with a reason (RFC-0006): set the annotation reconcile.fluxcd.io/suspended
to the message. The annotation is metadata, so the object's generation does not change. Every
Sluice kind honours it. Flux kinds honour only spec.suspend today, so on them the command sets
spec.suspend: true too, as the gate-controller's hold does, with the reason in the annotation.

The change is a server-side apply by the plugin, so the plugin co-owns what it sets: an object
suspended while a gate holds it stays suspended when the gate releases it. (A plain
` + "`kubectl patch ... spec.suspend: true`" + ` on an object the gate already holds changes nothing the API
server records, so it is undone when the gate releases; use this command instead.)

The gate-controller never resumes an object someone suspended, even when its gates open.

` + exitCodesHelp,
		Example: `  kubectl gate suspend kustomization/apps -m "migrating the database, ask #platform"
  kubectl gate suspend kustomizations -l team=payments -m "incident INC-123"`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			reason := message
			if reason == "" {
				reason = DefaultSuspendReason
			}
			return o.forEach(args, sel, func(info *resource.Info) bool {
				how, err := o.suspend(cmd.Context(), info, reason)
				if err != nil {
					fmt.Fprintf(o.ErrOut, "error: %s: %v\n", o.describe(info), err)
					return false
				}
				fmt.Fprintf(o.Out, "%s suspended (%s): %s\n", o.describe(info), how, reason)
				return true
			})
		},
	}
	cmd.Flags().StringVarP(&message, "message", "m", "", "why the object is suspended; shown in its annotation and status")
	addSelection(cmd.Flags(), &sel.all, &sel.selector, "object of the kind", "objects of the kind")
	return cmd
}

func newResumeCommand(o *options) *cobra.Command {
	var (
		sel     selection
		waitFor time.Duration
	)
	cmd := &cobra.Command{
		Use:   "resume (KIND/NAME... | KIND --all | KIND -l SELECTOR)",
		Short: "Resume a suspended object: remove reconcile.fluxcd.io/suspended and spec.suspend",
		Long: `Remove the annotation reconcile.fluxcd.io/suspended (RFC-0006), and spec.suspend where it is true.

Resuming an object that closed gates hold overrides the hold: the gate-controller lets it run
and does not hold it again until its gates open and close again.

With --wait[=DURATION] (default 1m), wait until nothing suspends the object any more: no Sluice
object reports Suspended, and the gate-controller has let go of it. If that is not confirmed in
time, the object is still resumed: the command says so and exits 3.

` + exitCodesHelp,
		Example: `  kubectl gate resume kustomization/apps
  kubectl gate resume healthcheck/web --wait
  kubectl gate resume kustomizations --all --wait=2m`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			unconfirmed := 0
			err := o.forEach(args, sel, func(info *resource.Info) bool {
				ok, confirmed := o.resumeOne(cmd.Context(), info, waitFor)
				if ok && !confirmed {
					unconfirmed++
				}
				return ok
			})
			if err == nil && unconfirmed > 0 {
				return tally{unconfirmed: unconfirmed, total: unconfirmed}.err()
			}
			return err
		},
	}
	addSelection(cmd.Flags(), &sel.all, &sel.selector, "object of the kind", "objects of the kind")
	cmd.Flags().DurationVar(&waitFor, "wait", 0, "wait this long for the object to run again; --wait alone waits 1m")
	cmd.Flags().Lookup("wait").NoOptDefVal = "1m"
	return cmd
}

// suspend sets the annotation, and spec.suspend on kinds held by it (Flux's), and says which.
func (o *options) suspend(ctx context.Context, info *resource.Info, reason string) (string, error) {
	objects, err := o.objectsOf(info)
	if err != nil {
		return "", err
	}
	_, how, err := actions.Suspend(ctx, objects, info.Mapping.GroupVersionKind, info.Name, reason, bySpec(info), o.fieldManager)
	return how, err
}

// objectsOf is the dynamic client of info's kind, in its namespace.
func (o *options) objectsOf(info *resource.Info) (dynamic.ResourceInterface, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if info.Mapping.Scope.Name() == meta.RESTScopeNameRoot {
		return dyn.Resource(info.Mapping.Resource), nil
	}
	return dyn.Resource(info.Mapping.Resource).Namespace(info.Namespace), nil
}

// bySpec reports whether the gate-controller's default targets hold info's kind by spec.suspend:
// the kinds (Flux's) that do not honour the annotation yet. An Argo CD Application is held by
// another field (hold.ArgoCDAutomatedSync), which this command does not set.
func bySpec(info *resource.Info) bool {
	mode, ok := kinds.ModeOf(kinds.Defaults(), info.Mapping.Resource.GroupResource())
	field := hold.SpecFieldOf(info.Mapping.GroupVersionKind.GroupKind())
	return ok && (mode == hold.ModeSpec || mode == hold.ModeBoth) && field.Name == hold.Suspend.Name
}

// resumeOne resumes one object and, with a wait, confirms it runs. It reports whether the
// resume was applied, and whether it is confirmed.
func (o *options) resumeOne(ctx context.Context, info *resource.Info, waitFor time.Duration) (bool, bool) {
	objects, err := o.objectsOf(info)
	var obj *unstructured.Unstructured
	var undone string
	if err == nil {
		obj, undone, err = actions.Resume(ctx, objects, info.Name, o.fieldManager)
	}
	if err != nil {
		fmt.Fprintf(o.ErrOut, "error: %s: %v\n", o.describe(info), err)
		return false, false
	}
	if undone == "" {
		fmt.Fprintf(o.Out, "%s has no %s annotation and spec.suspend is not true; nothing to resume\n", o.describe(info), suspend.Annotation)
		return true, true
	}
	fmt.Fprintf(o.Out, "%s resumed (removed %s)\n", o.describe(info), undone)
	if rec, held := heldByGates(obj); held {
		fmt.Fprintf(o.Out, "note: it was held by gates (%s); the gate-controller lets it run and holds it again only after they open and close\n", rec.Reason)
	}
	if waitFor == 0 {
		return true, true
	}
	return true, o.confirmRunning(ctx, info, waitFor)
}

// heldByGates returns the gate-controller's hold record on obj while the controller holds it.
func heldByGates(obj *unstructured.Unstructured) (hold.Record, bool) {
	value, ok := obj.GetAnnotations()[hold.RecordAnnotation]
	if !ok || !hold.OwnedFields(obj.GetManagedFields()).Record {
		return hold.Record{}, false
	}
	rec, err := hold.ParseRecord(value)
	return rec, err == nil && !rec.Yielded
}

// confirmRunning waits until nothing suspends the object: no annotation, no spec.suspend, no
// Suspended condition from its controller, and no hold the gate-controller still keeps.
func (o *options) confirmRunning(ctx context.Context, info *resource.Info, timeout time.Duration) bool {
	helper := resource.NewHelper(info.Client, info.Mapping)
	var why string
	confirmed, lastErr := poll(ctx, timeout, func(context.Context) (bool, error) {
		got, err := helper.Get(info.Namespace, info.Name)
		if err != nil {
			return false, err
		}
		u, ok := got.(*unstructured.Unstructured)
		if !ok {
			return false, fmt.Errorf("not readable as an object")
		}
		why = stillSuspended(u)
		return why == "", nil
	})
	if confirmed {
		fmt.Fprintf(o.Out, "%s is running\n", o.describe(info))
		return true
	}
	if why == "" && lastErr != nil {
		why = "last error: " + lastErr.Error()
	}
	fmt.Fprintf(o.Out, "%s resumed, but not yet confirmed running within %s: %s\n", o.describe(info), timeout, why)
	return false
}

// stillSuspended says what still suspends u, or "" when nothing does.
func stillSuspended(u *unstructured.Unstructured) string {
	if _, ok := suspend.Reason(u); ok {
		return "the " + suspend.Annotation + " annotation is back"
	}
	if v, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend"); v {
		return "spec.suspend is true again"
	}
	if rec, held := heldByGates(u); held {
		return "the gate-controller has not let go of it yet (" + rec.Reason + ")"
	}
	var status struct {
		Conditions []metav1.Condition `json:"conditions"`
	}
	if raw, ok := u.Object["status"].(map[string]any); ok {
		if b, err := json.Marshal(raw); err == nil && json.Unmarshal(b, &status) == nil && conditions.IsTrue(status.Conditions, conditions.Suspended) {
			return "its controller still reports Suspended (is it running?)"
		}
	}
	return ""
}

// forEach runs act on every object the arguments and selection name, and sums up the outcome.
func (o *options) forEach(args []string, sel selection, act func(*resource.Info) bool) error {
	infos, err := o.objects(args, sel)
	if err != nil {
		return err
	}
	t := tally{total: len(infos)}
	for _, info := range infos {
		if !act(info) {
			t.failed++
		}
	}
	return t.err()
}

// objects finds the objects named as KIND/NAME (kubectl's kind names and short names work), or
// the objects of KIND that --all or -l select, in the current namespace.
func (o *options) objects(args []string, sel selection) ([]*resource.Info, error) {
	if sel.all && sel.selector != "" {
		return nil, usageError("--all and -l cannot be used together")
	}
	selecting := sel.all || sel.selector != ""
	for _, a := range args {
		if strings.Contains(a, "/") == selecting {
			if selecting {
				return nil, usageError("with --all or -l, name a kind (e.g. kustomizations), not %s", a)
			}
			return nil, usageError("%s names no object: write KIND/NAME, or select objects of a kind with --all or -l", a)
		}
	}
	if o.allNamespaces && !selecting {
		return nil, usageError("a name means an object in one namespace: leave out -A, or select objects in every namespace with -A and KIND --all or -l")
	}
	ns, err := o.namespace()
	if err != nil {
		return nil, err
	}
	infos, err := resource.NewBuilder(o.flags).
		Unstructured().
		NamespaceParam(ns).DefaultNamespace().AllNamespaces(o.allNamespaces).
		LabelSelectorParam(sel.selector).
		SelectAllParam(sel.all).
		ResourceTypeOrNameArgs(true, args...).
		Flatten().
		Do().Infos()
	if err != nil {
		return nil, err
	}
	if len(infos) == 0 {
		return nil, &ExitError{Code: ExitFailed, Err: fmt.Errorf("no objects selected")}
	}
	return infos, nil
}

// describe names the object; with -A, with its namespace, so each line says which one it is.
func (o *options) describe(info *resource.Info) string {
	name := info.Mapping.Resource.GroupResource().String() + "/" + info.Name
	if o.allNamespaces && info.Namespace != "" {
		return info.Namespace + " " + name
	}
	return name
}
