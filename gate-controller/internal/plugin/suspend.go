package plugin

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/resource"

	"github.com/sluicehq/sluice/gate-controller/internal/hold"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// rfcDefaultReason is the value RFC-0006 gives the annotation when no message is given.
const rfcDefaultReason = "true"

func newSuspendCommand(o *options) *cobra.Command {
	var message string
	cmd := &cobra.Command{
		Use:   "suspend KIND/NAME",
		Short: "Suspend any object with a reason, through the reconcile.fluxcd.io/suspended annotation",
		Long: `Suspend any object with a reason (RFC-0006): set the annotation reconcile.fluxcd.io/suspended
to the message. The annotation is metadata, so the object's generation does not change. Every
Sluice kind honours it; Flux kinds honour only spec.suspend today, which this command does not touch.

The gate-controller never resumes an object someone suspended, even when its gates open.`,
		Example: `  kubectl gate suspend kustomization/apps -m "migrating the database, ask #platform"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reason := message
			if reason == "" {
				reason = rfcDefaultReason
			}
			info, err := o.object(args[0])
			if err != nil {
				return err
			}
			if err := o.patchAnnotation(info, reason); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "%s suspended: %s\n", describe(info), reason)
			return nil
		},
	}
	cmd.Flags().StringVarP(&message, "message", "m", "", "why the object is suspended; shown in its annotation and status")
	return cmd
}

func newResumeCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "resume KIND/NAME",
		Short: "Resume an object suspended through the reconcile.fluxcd.io/suspended annotation",
		Long: `Remove the annotation reconcile.fluxcd.io/suspended (RFC-0006). spec.suspend is left alone.

Resuming an object that closed gates hold overrides the hold: the gate-controller lets it run
and does not hold it again until its gates open and close again.`,
		Example: `  kubectl gate resume kustomization/apps`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			info, err := o.object(args[0])
			if err != nil {
				return err
			}
			obj, err := metaOf(info)
			if err != nil {
				return err
			}
			if _, ok := suspend.Reason(obj); !ok {
				fmt.Fprintf(o.Out, "%s has no %s annotation; nothing to resume\n", describe(info), suspend.Annotation)
				return nil
			}
			if err := o.patchAnnotation(info, nil); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "%s resumed\n", describe(info))
			if value, held := obj.GetAnnotations()[hold.RecordAnnotation]; held {
				if rec, err := hold.ParseRecord(value); err == nil && !rec.Yielded {
					fmt.Fprintf(o.Out, "note: it was held by gates (%s); the gate-controller lets it run and holds it again only after they open and close\n", rec.Reason)
				}
			}
			return nil
		},
	}
}

// object finds KIND/NAME, with kubectl's kind names and short names, in the current namespace.
func (o *options) object(arg string) (*resource.Info, error) {
	ns, err := o.namespace()
	if err != nil {
		return nil, err
	}
	infos, err := resource.NewBuilder(o.flags).
		Unstructured().
		NamespaceParam(ns).DefaultNamespace().
		ResourceTypeOrNameArgs(false, arg).
		SingleResourceType().
		Flatten().
		Do().Infos()
	if err != nil {
		return nil, err
	}
	if len(infos) != 1 {
		return nil, fmt.Errorf("%s names %d objects; name exactly one as KIND/NAME", arg, len(infos))
	}
	return infos[0], nil
}

func (o *options) patchAnnotation(info *resource.Info, value any) error {
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{suspend.Annotation: value}}})
	if err != nil {
		return err
	}
	_, err = resource.NewHelper(info.Client, info.Mapping).
		WithFieldManager(FieldManager).
		Patch(info.Namespace, info.Name, types.MergePatchType, data, nil)
	return err
}

func metaOf(info *resource.Info) (metav1.Object, error) {
	obj, ok := info.Object.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%s has no object metadata", describe(info))
	}
	return obj, nil
}

func describe(info *resource.Info) string {
	return info.Mapping.Resource.GroupResource().String() + "/" + info.Name
}
