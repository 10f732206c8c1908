package kubectlplugin

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// Output formats of refs.
const (
	formatTree = ""
	formatDOT  = "dot"
	formatJSON = "json"
)

func newRefs(flags *genericclioptions.ConfigFlags) *cobra.Command {
	var (
		output        string
		allNamespaces bool
	)
	cmd := &cobra.Command{
		Use:   "refs",
		Short: "Show a workspace's references as deletion protection sees them",
		Long: "Refs reads every object of the types the workspace binds from APIExports (in the namespace, and the cluster-scoped ones), " +
			"asks deletion protection for each, with a dry run of its DELETE that changes nothing, which dependents reference it, " +
			"and prints the references: as a tree under each referenced object, as DOT for Graphviz, or as JSON. " +
			"It exits 0 with every object answered, and 2 when some could not be asked about (they are listed on stderr).",
		Example: "  kubectl depctrl refs -n team-a\n  kubectl depctrl refs -A -o dot | dot -Tsvg > refs.svg",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != formatTree && output != formatDOT && output != formatJSON {
				return &exitError{code: ExitError, err: fmt.Errorf("--output %q: want dot, json, or nothing for a tree", output)}
			}
			g, err := readGraph(cmd, flags, allNamespaces)
			if err != nil {
				return &exitError{code: ExitError, err: err}
			}
			if err := g.writeRefs(cmd.OutOrStdout(), output); err != nil {
				return &exitError{code: ExitError, err: err}
			}
			if err := g.unansweredError(); err != nil {
				return &exitError{code: ExitError, err: err}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: dot, json, or nothing for a tree")
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "read every namespace, not only the current one")
	return cmd
}

// readGraph builds the graph of the workspace the flags name, in their
// namespace or in every one.
func readGraph(cmd *cobra.Command, flags *genericclioptions.ConfigFlags, allNamespaces bool) (*Graph, error) {
	ws, err := newLiveWorkspace(flags)
	if err != nil {
		return nil, err
	}
	namespace := ""
	if !allNamespaces {
		if namespace, _, err = flags.ToRawKubeConfigLoader().Namespace(); err != nil {
			return nil, fmt.Errorf("reading the namespace: %w", err)
		}
	}
	return buildGraph(cmd.Context(), ws, namespace)
}

// writeRefs prints g's references in format.
func (g *Graph) writeRefs(out io.Writer, format string) error {
	switch format {
	case formatJSON:
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(g)
	case formatDOT:
		_, err := io.WriteString(out, g.dot())
		return err
	default:
		_, err := io.WriteString(out, g.tree())
		return err
	}
}

// tree draws each referenced object with the objects that reference it
// beneath, and theirs beneath them. It starts from the objects that are
// referenced and reference nothing themselves, then draws what is left
// (objects in a cycle); an object met again on its own branch is marked,
// not followed, and one whose dependents are drawn already is marked to
// be seen above.
func (g *Graph) tree() string {
	deps := g.dependents()
	references := map[objectKey]bool{}
	for _, r := range g.References {
		references[r.From.key()] = true
	}
	if len(g.References) == 0 {
		return "no references\n"
	}
	var b strings.Builder
	drawn := map[objectKey]bool{}
	var draw func(r Reference, prefix string, last bool, path map[objectKey]bool)
	draw = func(r Reference, prefix string, last bool, path map[objectKey]bool) {
		branch, next := "├── ", "│   "
		if last {
			branch, next = "└── ", "    "
		}
		line := r.From.String()
		if r.Pending {
			line += " [being written]"
		}
		k := r.From.key()
		switch {
		case path[k]:
			fmt.Fprintf(&b, "%s%s%s [cycle]\n", prefix, branch, line)
			return
		case drawn[k] && len(deps[k]) > 0:
			// Its dependents are drawn once: shared ones would
			// otherwise be drawn again under every object they
			// reference, as many times as there are paths to them.
			fmt.Fprintf(&b, "%s%s%s [see above]\n", prefix, branch, line)
			return
		}
		fmt.Fprintf(&b, "%s%s%s\n", prefix, branch, line)
		drawn[k] = true
		path[k] = true
		for i, d := range deps[k] {
			draw(d, prefix+next, i == len(deps[k])-1, path)
		}
		delete(path, k)
	}
	root := func(o Object) {
		k := o.key()
		drawn[k] = true
		b.WriteString(o.String() + "\n")
		path := map[objectKey]bool{k: true}
		for i, d := range deps[k] {
			draw(d, "", i == len(deps[k])-1, path)
		}
	}
	for _, o := range g.Objects {
		if len(deps[o.key()]) > 0 && !references[o.key()] {
			root(o)
		}
	}
	for _, o := range g.Objects {
		if len(deps[o.key()]) > 0 && !drawn[o.key()] {
			root(o)
		}
	}
	return b.String()
}

// dot is g in Graphviz's DOT: an edge from each dependent to what it
// references, dashed while its write is not stored.
func (g *Graph) dot() string {
	var b strings.Builder
	b.WriteString("digraph references {\n  rankdir=LR;\n")
	for _, o := range g.Objects {
		fmt.Fprintf(&b, "  %s;\n", strconv.Quote(o.String()))
	}
	for _, r := range g.References {
		style := ""
		if r.Pending {
			style = " [style=dashed]"
		}
		fmt.Fprintf(&b, "  %s -> %s%s;\n", strconv.Quote(r.From.String()), strconv.Quote(r.To.String()), style)
	}
	b.WriteString("}\n")
	return b.String()
}
