package kubectlplugin

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/internal/blockers"
)

// Verdict is what deletion protection decides of one deletion now, and of
// which object.
type Verdict struct {
	// Object is "resource/name", as asked.
	Object    string `json:"object"`
	Namespace string `json:"namespace,omitempty"`
	blockers.Verdict
}

func newWhy(flags *genericclioptions.ConfigFlags) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "why TYPE/NAME | TYPE NAME",
		Short: "Show what blocks the deletion of an object right now",
		Long: "Why asks the deletion webhook, with a dry run of the DELETE that changes nothing, whether the object may be deleted now, " +
			"and lists the dependents that block it: stored ones, and those whose write is admitted but not stored yet. " +
			"It exits 0 when nothing blocks the deletion, 1 when dependents do, and 2 when it cannot tell.",
		Example: "  kubectl depctrl why vpc/vpc-1 -n team-a\n  kubectl depctrl why vpcs vpc-1 -o json",
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "" && output != "json" {
				return &exitError{code: ExitError, err: fmt.Errorf("--output %q: want json, or nothing for a table", output)}
			}
			resource, name, err := parseTarget(args)
			if err != nil {
				return &exitError{code: ExitError, err: err}
			}
			api, namespace, err := resourceClient(flags, resource)
			if err != nil {
				return &exitError{code: ExitError, err: err}
			}
			answer, err := blockers.Ask(cmd.Context(), api, name)
			if err != nil {
				return &exitError{code: ExitError, err: err}
			}
			v := Verdict{Object: resource + "/" + name, Namespace: namespace, Verdict: answer}
			if err := v.write(cmd.OutOrStdout(), output); err != nil {
				return &exitError{code: ExitError, err: err}
			}
			if !v.Deletable {
				return &exitError{code: ExitBlocked}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json, or nothing for a table")
	return cmd
}

// parseTarget reads "TYPE/NAME" or "TYPE NAME".
func parseTarget(args []string) (resource, name string, err error) {
	switch {
	case len(args) == 2 && !strings.Contains(args[0], "/"):
		resource, name = args[0], args[1]
	case len(args) == 1:
		var ok bool
		resource, name, ok = strings.Cut(args[0], "/")
		if !ok {
			return "", "", fmt.Errorf("%q: want TYPE/NAME, or TYPE NAME", args[0])
		}
	default:
		return "", "", fmt.Errorf("%q: want TYPE/NAME, or TYPE NAME", strings.Join(args, " "))
	}
	if resource == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("%q: want TYPE/NAME, or TYPE NAME", strings.Join(args, " "))
	}
	return resource, name, nil
}

// resourceClient finds resource (a plural, singular or short name, with
// or without its group) in the workspace flags name, and returns its
// client, in the namespace the flags name when it is namespaced.
func resourceClient(flags *genericclioptions.ConfigFlags, resource string) (dynamic.ResourceInterface, string, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, "", fmt.Errorf("reading the kubeconfig: %w", err)
	}
	mapper, err := flags.ToRESTMapper()
	if err != nil {
		return nil, "", fmt.Errorf("discovering the workspace's types: %w", err)
	}
	gvr, err := mapper.ResourceFor(schema.ParseGroupResource(resource).WithVersion(""))
	if err != nil {
		return nil, "", fmt.Errorf("finding the type %q: %w", resource, err)
	}
	kind, err := mapper.KindFor(gvr)
	if err != nil {
		return nil, "", fmt.Errorf("finding the kind of %s: %w", gvr.GroupResource(), err)
	}
	mapping, err := mapper.RESTMapping(kind.GroupKind(), kind.Version)
	if err != nil {
		return nil, "", fmt.Errorf("finding the scope of %s: %w", gvr.GroupResource(), err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("building a client: %w", err)
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return dyn.Resource(mapping.Resource), "", nil
	}
	namespace, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("reading the namespace: %w", err)
	}
	return dyn.Resource(mapping.Resource).Namespace(namespace), namespace, nil
}

// write prints v as a table, or as JSON with output "json".
func (v Verdict) write(out io.Writer, output string) error {
	if output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	where := ""
	if v.Namespace != "" {
		where = " in namespace " + v.Namespace
	}
	var b strings.Builder
	if v.Deletable {
		fmt.Fprintf(&b, "nothing blocks the deletion of %s%s now\n", v.Object, where)
		_, err := io.WriteString(out, b.String())
		return err
	}
	// The message says how many more there are than the webhook names.
	fmt.Fprintf(&b, "%s%s cannot be deleted now:\n  %s\n\n", v.Object, where, v.Message)
	rows := []string{"KIND\tNAMESPACE\tNAME\tWORKSPACE\tSTATE"}
	for _, bl := range v.Blockers {
		name, state := bl.Name, "stored"
		if name == "" {
			name = bl.GenerateName + "*"
		}
		if bl.Pending {
			state = "being written"
		}
		ns := bl.Namespace
		if ns == "" {
			ns = "-"
		}
		rows = append(rows, fmt.Sprintf("%s.%s\t%s\t%s\t%s\t%s", bl.Kind, bl.Group, ns, name, bl.Workspace, state))
	}
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	if _, err := io.WriteString(w, strings.Join(rows, "\n")+"\n"); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(out, b.String())
	return err
}
