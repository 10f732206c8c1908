package decision

// Blocker, what the lookups of a deletion find, and the denial that names
// them.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Blocker is a dependent that still references the object being deleted.
type Blocker struct {
	Kind, Namespace, Name string
	// Pending: the dependent's write that references the object was
	// admitted but is not stored (yet).
	Pending bool
}

func (b Blocker) String() string {
	if b.Pending {
		return b.Kind + "/" + b.Name + " (being written)"
	}
	return b.Kind + "/" + b.Name
}

// sortBlockers orders blockers by kind, namespace and name: a denial names
// the same dependents in the same order whichever lookup finished first.
func sortBlockers(blockers []Blocker) {
	slices.SortFunc(blockers, func(a, b Blocker) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}

// denialMessage says why the deletion of target is refused: the blockers,
// and how many more there are (more < 0: an unknown number). With
// withNamespaces it names the namespace of each.
func denialMessage(target string, blockers []Blocker, more int, withNamespaces bool) string {
	names := make([]string, len(blockers))
	for i, b := range blockers {
		names[i] = b.String()
		if withNamespaces && b.Namespace != "" {
			names[i] += " in namespace " + b.Namespace
		}
	}
	msg := fmt.Sprintf("cannot delete %s: still referenced by %s", target, strings.Join(names, ", "))
	switch {
	case more < 0:
		msg += " and more"
	case more > 0:
		msg += fmt.Sprintf(" and %d more", more)
	}
	return msg
}
