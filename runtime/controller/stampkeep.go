package controller

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

// publish is what the configurations are to publish for each protected
// resource (protecting: the rules over it, as a stamp counts them): the
// stamp stamps holds for it (planned, once held long enough and confirmed:
// holdStamps, confirmStamps), and one stamp of those published accepts
// whose rules keep the planned ones (settle.Keeps: rules were only removed
// since) or bridge to them (settle.Bridges: rules were added). Objects
// settled under the kept stamp then skip the webhook while the settler
// labels them under the new one, instead of all going back to the webhook
// at every rule change. A bridge lasts until the webhook ends it
// (settle.PublishedGuard), and the rules it lacks are not Ready meanwhile
// (bridged); once no configuration accepts it, it is never published
// again. A rule edited or re-indexed keeps nothing: every object is decided
// by the webhook until it is settled again.
func publish(stamps, planned Stamps, protecting map[schema.GroupResource][]settle.Protecting, published map[schema.GroupResource]settle.Publication) map[schema.GroupResource]settle.Publication {
	out := map[schema.GroupResource]settle.Publication{}
	for gr, ps := range protecting {
		pub := settle.Publication{Rules: map[string][]settle.RuleRef{}}
		if current := stamps[gr]; current != "" {
			pub.Current = current
			pub.Rules[current] = settle.RulesOf(ps)
		}
		want, settleable := planned[gr]
		if stamp, kept, ok := keep(published[gr], want, settleable, ps); ok {
			pub.Rules[stamp] = kept
		}
		if len(pub.Rules) > 0 {
			out[gr] = pub
		}
	}
	return out
}

// keep picks, of the stamps pub accepts other than planned, the one to
// keep accepting: its current one if it keeps the rules ps (only while
// they may be settled under planned) or bridges to them, else an older one
// that does; at most one, so that a run of changes does not pile stamps
// up.
func keep(pub settle.Publication, planned string, settleable bool, ps []settle.Protecting) (string, []settle.RuleRef, bool) {
	candidates := append([]string{pub.Current}, slices.Sorted(maps.Keys(pub.Rules))...)
	for _, stamp := range candidates {
		if stamp == "" || stamp == planned {
			continue
		}
		if settleable && pub.Kept(stamp, ps) || pub.Bridges(stamp, ps) {
			return stamp, pub.Rules[stamp], true
		}
	}
	return "", nil, false
}

// bridged names a type r protects whose publication in pubs accepts a
// stamp that lacks r as protecting lists it (settle.Publication.Lacks), ""
// when there is none.
func bridged(r RuleInput, pubs map[schema.GroupResource]settle.Publication, protecting map[schema.GroupResource][]settle.Protecting) string {
	for _, d := range r.Dependencies {
		gr := d.GVR.GroupResource()
		pub, ok := pubs[gr]
		if !ok {
			continue
		}
		for _, p := range protecting[gr] {
			if p.Rule.Key == r.Key && pub.Lacks(p.Rule) {
				return groupResource(d.GVR)
			}
		}
	}
	return ""
}
