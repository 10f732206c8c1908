package decision

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// Protections finds the rules' protections of a protected resource (the
// rule registry).
type Protections interface {
	Protections(target schema.GroupVersionResource) []registry.Protection
}

// byDependent merges the protections that share a dependent resource into
// one whose paths are all of theirs: a dependent blocks when any rule's path
// references the object, and one read of the dependents answers for every
// rule, however many protect the same type.
func byDependent(protections []registry.Protection) []registry.Protection {
	// Linear in the rules: a type can have a thousand rules over it, and
	// this runs on every protected DELETE.
	var merged []registry.Protection
	type seen struct {
		rules []string
		paths map[string]bool
	}
	var state []seen
	at := map[schema.GroupVersionResource]int{}
	for _, p := range protections {
		i, ok := at[p.Dependent]
		if !ok {
			i = len(merged)
			at[p.Dependent] = i
			merged = append(merged, registry.Protection{Dependent: p.Dependent, DependentKind: p.DependentKind})
			state = append(state, seen{paths: map[string]bool{}})
		}
		m, st := &merged[i], &state[i]
		if m.Since.IsZero() || p.Since.Before(m.Since) {
			m.Since = p.Since
		}
		st.rules = append(st.rules, p.Rule)
		for _, uid := range p.RuleUIDs {
			if !slices.Contains(m.RuleUIDs, uid) {
				m.RuleUIDs = append(m.RuleUIDs, uid)
			}
		}
		for _, path := range p.Paths {
			if !st.paths[path.String()] {
				st.paths[path.String()] = true
				m.Paths = append(m.Paths, path)
			}
		}
		for _, e := range p.DependentExports {
			if !slices.Contains(m.DependentExports, e) {
				m.DependentExports = append(m.DependentExports, e)
			}
		}
	}
	for i := range merged {
		merged[i].Rule = strings.Join(state[i].rules, ", ")
	}
	return merged
}

// byDependentResource merges protections by dependent type (byDependent)
// and keys them the way intents name their dependents, "resource.group".
func byDependentResource(protections []registry.Protection) map[string]registry.Protection {
	out := map[string]registry.Protection{}
	for _, p := range byDependent(protections) {
		out[p.Dependent.GroupResource().String()] = p
	}
	return out
}
