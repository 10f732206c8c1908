package v1alpha1

// Dependency cycles between rules: types whose objects can protect each
// other forever. The controller reports them on the rules (the Acyclic
// condition), and the Terraform provider refuses, at plan, a rule that would
// close one. This is pure: it knows types and rule names, not where either
// comes from.

import (
	"slices"
	"sort"
	"strings"
)

// CycleEdge says that objects of type From reference (and so protect)
// objects of type To, by the rule named Rule.
//
// +kubebuilder:object:generate=false
type CycleEdge struct {
	Rule     string
	From, To string
}

// FindCycles returns, for every rule whose edge lies on a cycle between
// different types, that cycle in a readable, stable order, each step with
// the rules that make it ("compute.io/vms -> network.io/vpcs (rule
// c1/vm-needs-vpc) -> compute.io/vms (rule c2/vpc-needs-vm)"). Objects on such a
// cycle can protect each other forever; deleting one needs skip-protection.
// A type referencing its own kind (a VPC naming a parent VPC) is not a
// cycle: its instances can still be deleted leaf first.
func FindCycles(edges []CycleEdge) map[string]string {
	out := map[string]string{}
	for rule, c := range find(edges) {
		out[rule] = c.Path
	}
	return out
}

// Cycle is one rule's cycle: the walk FindCycles describes, and every rule
// that makes a step of it, sorted.
//
// +kubebuilder:object:generate=false
type Cycle struct {
	Path  string
	Rules []string
}

// CycleOf returns the cycle of rule, as FindCycles describes it, and whether rule is
// on one.
func CycleOf(edges []CycleEdge, rule string) (Cycle, bool) {
	c, ok := find(edges)[rule]
	return c, ok
}

func find(edges []CycleEdge) map[string]Cycle {
	adj := map[string][]string{}
	nodes := map[string]bool{}
	rules := map[[2]string][]string{}
	for _, e := range edges {
		nodes[e.From], nodes[e.To] = true, true
		if e.From != e.To {
			step := [2]string{e.From, e.To}
			if len(rules[step]) == 0 {
				adj[e.From] = append(adj[e.From], e.To)
			}
			rules[step] = append(rules[step], e.Rule)
		}
	}
	comp := stronglyConnected(nodes, adj)
	members := map[int][]string{}
	for n, c := range comp {
		members[c] = append(members[c], n)
	}
	out := map[string]Cycle{}
	for _, e := range edges {
		if e.From == e.To || comp[e.From] != comp[e.To] {
			continue
		}
		out[e.Rule] = describeCycle(e.From, members[comp[e.From]], adj, rules)
	}
	return out
}

// describeCycle walks from start through its component back to start and
// names each step with the rules that make it.
func describeCycle(start string, component []string, adj map[string][]string, rules map[[2]string][]string) Cycle {
	in := map[string]bool{}
	for _, n := range component {
		in[n] = true
	}
	// Breadth-first search for the shortest way back to start.
	prev := map[string]string{}
	queue := []string{start}
	seen := map[string]bool{start: true}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		next := append([]string(nil), adj[n]...)
		sort.Strings(next)
		for _, m := range next {
			if !in[m] {
				continue
			}
			if m == start {
				path := []string{start}
				for cur := n; cur != start; cur = prev[cur] {
					path = append([]string{cur}, path...)
				}
				return describePath(append([]string{start}, path...), rules)
			}
			if !seen[m] {
				seen[m] = true
				prev[m] = n
				queue = append(queue, m)
			}
		}
	}
	return Cycle{Path: start}
}

// stronglyConnected labels every node with its component (Tarjan).
func stronglyConnected(nodes map[string]bool, adj map[string][]string) map[string]int {
	index, low, comp := map[string]int{}, map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	next, ncomp := 0, 0
	var visit func(string)
	visit = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range adj[v] {
			if _, ok := index[w]; !ok {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp[w] = ncomp
				if w == v {
					break
				}
			}
			ncomp++
		}
	}
	sorted := make([]string, 0, len(nodes))
	for n := range nodes {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		if _, ok := index[n]; !ok {
			visit(n)
		}
	}
	return comp
}

// describePath writes a walk over types, each step followed by its rules,
// and collects those rules.
func describePath(path []string, rules map[[2]string][]string) Cycle {
	var b strings.Builder
	var all []string
	b.WriteString(path[0])
	for i := 1; i < len(path); i++ {
		by := append([]string(nil), rules[[2]string{path[i-1], path[i]}]...)
		sort.Strings(by)
		all = append(all, by...)
		word := "rule"
		if len(by) > 1 {
			word = "rules"
		}
		b.WriteString(" -> " + path[i] + " (" + word + " " + strings.Join(by, ", ") + ")")
	}
	sort.Strings(all)
	return Cycle{Path: b.String(), Rules: slices.Compact(all)}
}
