package decision

// Blocker, what the lookups of a deletion find, and the denial that names
// them.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// Blocker is a dependent that still references the object being deleted.
type Blocker struct {
	// Dependent is the dependent's type as the rule names it.
	Dependent             schema.GroupVersionResource
	Kind, Namespace, Name string
	// GenerateName is the prefix of a dependent being created without a
	// name (then Name is "").
	GenerateName string
	// Pending: the dependent's write that references the object was
	// admitted but is not stored (yet).
	Pending bool
}

func (b Blocker) String() string {
	name := b.Name
	if name == "" {
		name = b.GenerateName + "*"
	}
	if b.Pending {
		return b.Kind + "/" + name + " (being written)"
	}
	return b.Kind + "/" + name
}

// cause is b as a cause of the denial (v1alpha1.DependentCause), b being
// in the logical cluster cluster.
func (b Blocker) cause(cluster string) metav1.StatusCause {
	return v1alpha1.DependentCause(v1alpha1.DependentRef{
		Workspace: cluster, Group: b.Dependent.Group, Version: b.Dependent.Version, Resource: b.Dependent.Resource,
		Kind: b.Kind, Namespace: b.Namespace, Name: b.Name, GenerateName: b.GenerateName,
	}, b.Pending)
}

// denialDetails are the details of the denial of d's deletion: the object,
// a cause for each blocker, and one that says how many more there are
// (more < 0: an unknown number) when there are.
func denialDetails(d admission.Deletion, blockers []Blocker, more int) *metav1.StatusDetails {
	out := &metav1.StatusDetails{Name: d.Name, Group: d.Resource.Group, Kind: d.Resource.Resource, UID: d.Meta.UID}
	for _, b := range blockers {
		out.Causes = append(out.Causes, b.cause(d.Cluster))
	}
	if more != 0 {
		out.Causes = append(out.Causes, v1alpha1.MoreCause(more))
	}
	return out
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
	msg := fmt.Sprintf("cannot delete %s: %s %s", target, v1alpha1.StillReferencedPhrase, strings.Join(names, ", "))
	switch {
	case more < 0:
		msg += " and more"
	case more > 0:
		msg += fmt.Sprintf(" and %d more", more)
	}
	return msg
}

// union adds to named, the blockers a lookup named with more left out (< 0:
// an unknown number), those of extra it does not name, each once, keeping
// at most limit of them in order; it returns them and how many it leaves
// out. With counted, extra holds stored dependents, which a lookup that
// left some out counted among more when it did not name them: each one
// named now is one fewer left out.
func union(named []Blocker, more int, extra []Blocker, counted bool, limit int) ([]Blocker, int) {
	out := slices.Clone(named)
	for _, x := range extra {
		if slices.Contains(out, x) {
			continue
		}
		out = append(out, x)
		if counted && more > 0 {
			more--
		}
	}
	sortBlockers(out)
	if len(out) > limit {
		if more >= 0 {
			more += len(out) - limit
		}
		out = out[:limit]
	}
	return out, more
}
