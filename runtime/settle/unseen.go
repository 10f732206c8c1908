package settle

import "github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"

// WrittenUnseen reports whether a reference at path p of a dependent may be
// written by a request that no reference index webhook sees: one into
// .status, which a type with a status subresource writes only through it.
// Such a write records no intent, and the intent's patch is what unsettles
// an object that gains a reference, so an object protected through such a
// path is never settled: its type gets no stamp.
//
// The webhook cannot tell which types have the subresource (it never reads
// their schemas), so it holds this for every .status path, and the
// controller (PlanStamps) does the same, so that neither publishes nor
// keeps a stamp the other would withdraw. The scale subresource writes only
// a number, at its specReplicasPath, which can take a reference away but
// never make one: it does not count here.
func WrittenUnseen(p fieldpath.Path) bool { return p.Under("status") }
