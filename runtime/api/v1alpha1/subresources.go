package v1alpha1

import (
	"fmt"
	"strings"

	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
)

// ReasonFieldPathInSubresource is the reason of the TypesServed condition
// when a field path lies in what a subresource of the dependent type writes.
const ReasonFieldPathInSubresource = "FieldPathInSubresource"

// inSubresource says, when path p of a rule lies in what a subresource of
// the dependent resource group/resource, as export e serves it, writes, which
// subresource writes it and why the rule cannot stand; "" when none does.
//
// The reference index webhook sees the writes of the resource itself, not
// those of its subresources, and such a write could not change the index
// labels anyway: the API server keeps the object's metadata as it was on a
// write of /status or /scale. So a reference made there records no intent
// (which closes the window between a write's admission and its storage, and
// unsettles the object it names) and no label. What each subresource
// writes is what the API server's strategies for custom resources let
// through:
//   - status, in every served version that has it: all of .status, which
//     writes of the resource itself then leave as it was;
//   - scale: its specReplicasPath, and nothing else.
//
// Every served version counts, not only the rule's: a write through any of
// them changes the one stored object. A type without a status subresource
// writes .status with the object, through the index like any field.
func inSubresource(e *ExportTypes, group, resource string, p fieldpath.Path) string {
	for _, r := range e.Resources {
		if r.Group != group || r.Resource != resource {
			continue
		}
		for _, v := range r.Versions {
			if !v.Served {
				continue
			}
			if v.Subresources.Status != nil && p.Under("status") {
				return fmt.Sprintf("%s lies in .status, which %s %s (export %s) writes through its status subresource", p, resource, v.Name, e.Name) + unseen
			}
			if sc := v.Subresources.Scale; sc != nil {
				if written := strings.Split(strings.TrimPrefix(sc.SpecReplicasPath, "."), "."); p.Under(written...) {
					return fmt.Sprintf("%s lies in %s, which %s %s (export %s) writes through its scale subresource", p, sc.SpecReplicasPath, resource, v.Name, e.Name) + unseen
				}
			}
		}
	}
	return ""
}

// unseen ends the message of inSubresource: what goes wrong, and what to do.
const unseen = ": no reference index webhook sees such a write, so a reference made there records no intent and a deletion " +
	"decided meanwhile can miss it; reference the object from a field that writes of the object itself set, such as one in .spec"
