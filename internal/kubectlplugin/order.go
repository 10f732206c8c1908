package kubectlplugin

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// Order is a safe deletion order: the objects of each wave may be deleted
// together once every wave before it is gone, since nothing of a later
// wave references them.
type Order struct {
	Waves [][]Object `json:"waves"`
	// Cycles are objects that reference each other, with the references
	// that close the loop: protection refuses each of their deletions
	// while the others stand.
	Cycles []Cycle `json:"cycles,omitempty"`
	// Stuck are the objects that a cycle's member references, directly or
	// not: they can go only after the cycle.
	Stuck []Object `json:"stuck,omitempty"`
}

// Cycle is objects that reference each other.
type Cycle struct {
	Objects    []Object    `json:"objects"`
	References []Reference `json:"references"`
}

func newOrder(flags *genericclioptions.ConfigFlags) *cobra.Command {
	var (
		output        string
		allNamespaces bool
	)
	cmd := &cobra.Command{
		Use:   "order",
		Short: "Show an order in which a namespace's or workspace's objects can be deleted",
		Long: "Order reads the workspace's references as refs does and sorts its objects into waves: the objects of a wave may be deleted together " +
			"once every earlier wave is gone, since nothing left references them. Objects that reference each other in a cycle have no such order: " +
			"they are listed with the references that form the cycle, and the objects they reference after them. " +
			"It exits 0 when every object has its place, 1 when a cycle stands in the way, and 2 when it cannot tell.",
		Example: "  kubectl depctrl order -n team-a\n  kubectl depctrl order -A -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != formatJSON {
				return &exitError{code: ExitError, err: fmt.Errorf("--output %q: want json, or nothing for a table", output)}
			}
			g, err := readGraph(cmd, flags, allNamespaces)
			if err != nil {
				return &exitError{code: ExitError, err: err}
			}
			o := g.order()
			if err := o.write(cmd.OutOrStdout(), output); err != nil {
				return &exitError{code: ExitError, err: err}
			}
			if err := g.unansweredError(); err != nil {
				return &exitError{code: ExitError, err: err}
			}
			if len(o.Cycles) > 0 {
				return &exitError{code: ExitBlocked}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json, or nothing for a table")
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "order every namespace, not only the current one")
	return cmd
}

// order sorts g's objects into waves (Kahn's algorithm, a wave at a time):
// an object joins a wave once every object that references it is in an
// earlier one. What is left is in a cycle or behind one.
func (g *Graph) order() Order {
	dependents := map[objectKey]int{}
	references := map[objectKey][]Object{}
	for _, r := range g.References {
		dependents[r.To.key()]++
		references[r.From.key()] = append(references[r.From.key()], r.To)
	}
	var o Order
	placed := map[objectKey]bool{}
	wave := slices.DeleteFunc(slices.Clone(g.Objects), func(x Object) bool { return dependents[x.key()] > 0 })
	for len(wave) > 0 {
		o.Waves = append(o.Waves, wave)
		var next []Object
		for _, x := range wave {
			placed[x.key()] = true
			for _, to := range references[x.key()] {
				if dependents[to.key()]--; dependents[to.key()] == 0 {
					next = append(next, to)
				}
			}
		}
		slices.SortFunc(next, compareObjects)
		wave = slices.CompactFunc(next, func(a, b Object) bool { return a.key() == b.key() })
	}
	var left []Object
	for _, x := range g.Objects {
		if !placed[x.key()] {
			left = append(left, x)
		}
	}
	o.Cycles = g.cycles(left)
	inCycle := map[objectKey]bool{}
	for _, c := range o.Cycles {
		for _, x := range c.Objects {
			inCycle[x.key()] = true
		}
	}
	for _, x := range left {
		if !inCycle[x.key()] {
			o.Stuck = append(o.Stuck, x)
		}
	}
	return o
}

// cycles finds the strongly connected components among objects (Tarjan's
// algorithm) that are cycles: more than one object, or one that
// references itself.
func (g *Graph) cycles(objects []Object) []Cycle {
	among := map[objectKey]bool{}
	for _, x := range objects {
		among[x.key()] = true
	}
	out := map[objectKey][]Reference{}
	for _, r := range g.References {
		if among[r.From.key()] && among[r.To.key()] {
			out[r.From.key()] = append(out[r.From.key()], r)
		}
	}
	var (
		index   = map[objectKey]int{}
		low     = map[objectKey]int{}
		onStack = map[objectKey]bool{}
		stack   []Object
		found   []Cycle
		next    int
	)
	var visit func(x Object)
	visit = func(x Object) {
		k := x.key()
		index[k], low[k] = next, next
		next++
		stack = append(stack, x)
		onStack[k] = true
		for _, r := range out[k] {
			to := r.To.key()
			if _, seen := index[to]; !seen {
				visit(r.To)
				low[k] = min(low[k], low[to])
			} else if onStack[to] {
				low[k] = min(low[k], index[to])
			}
		}
		if low[k] != index[k] {
			return
		}
		var members []Object
		for {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[top.key()] = false
			members = append(members, top)
			if top.key() == k {
				break
			}
		}
		member := map[objectKey]bool{}
		for _, m := range members {
			member[m.key()] = true
		}
		var refs []Reference
		for _, m := range members {
			for _, r := range out[m.key()] {
				if member[r.To.key()] {
					refs = append(refs, r)
				}
			}
		}
		if len(members) > 1 || len(refs) > 0 {
			slices.SortFunc(members, compareObjects)
			found = append(found, Cycle{Objects: members, References: refs})
		}
	}
	for _, x := range objects {
		if _, seen := index[x.key()]; !seen {
			visit(x)
		}
	}
	slices.SortFunc(found, func(a, b Cycle) int { return compareObjects(a.Objects[0], b.Objects[0]) })
	return found
}

// write prints o as a table of waves, or as JSON with output "json".
func (o Order) write(out io.Writer, output string) error {
	if output == formatJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(o)
	}
	rows := []string{"WAVE\tKIND\tNAMESPACE\tNAME"}
	for i, wave := range o.Waves {
		for _, x := range wave {
			ns := x.Namespace
			if ns == "" {
				ns = "-"
			}
			rows = append(rows, fmt.Sprintf("%d\t%s\t%s\t%s", i+1, x.qualifiedKind(), ns, x.displayName()))
		}
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	if _, err := io.WriteString(w, strings.Join(rows, "\n")+"\n"); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, c := range o.Cycles {
		names := make([]string, len(c.Objects))
		for i, x := range c.Objects {
			names[i] = x.String()
		}
		fmt.Fprintf(&b, "\ncycle: %s cannot be deleted in any order; they reference each other:\n", strings.Join(names, ", "))
		for _, r := range c.References {
			fmt.Fprintf(&b, "  %s references %s\n", r.From, r.To)
		}
	}
	if len(o.Stuck) > 0 {
		names := make([]string, len(o.Stuck))
		for i, x := range o.Stuck {
			names[i] = x.String()
		}
		fmt.Fprintf(&b, "\nafter the cycles: %s\n", strings.Join(names, ", "))
	}
	_, err := io.WriteString(out, b.String())
	return err
}
