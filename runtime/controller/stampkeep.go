package controller

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

// publish is what the configurations are to publish for each resource with
// a planned stamp (planned, computed from rules): the stamp stamps holds
// for it (planned, once held long enough and confirmed: holdStamps,
// confirmStamps), and one stamp of those published accepts whose rules keep
// the planned ones (settle.Keeps: rules were only removed since). Objects
// settled under the kept stamp then skip the webhook while the settler
// labels them under the new one, instead of all going back to the webhook
// at every rule removal. A rule added, edited or re-indexed keeps nothing:
// every object is decided by the webhook until it is settled again.
func publish(stamps, planned Stamps, rules map[schema.GroupResource][]settle.RuleRef, published map[schema.GroupResource]settle.Publication) map[schema.GroupResource]settle.Publication {
	out := map[schema.GroupResource]settle.Publication{}
	for gr, want := range planned {
		pub := settle.Publication{Rules: map[string][]settle.RuleRef{}}
		if current := stamps[gr]; current != "" {
			pub.Current = current
			pub.Rules[current] = rules[gr]
		}
		if stamp, kept, ok := keep(published[gr], want, rules[gr]); ok {
			pub.Rules[stamp] = kept
		}
		if len(pub.Rules) > 0 {
			out[gr] = pub
		}
	}
	return out
}

// keep picks, of the stamps pub accepts other than planned, the one to
// keep accepting: its current one if its recorded rules keep rules, else
// an older one that does; at most one, so that a run of removals does not
// pile stamps up.
func keep(pub settle.Publication, planned string, rules []settle.RuleRef) (string, []settle.RuleRef, bool) {
	candidates := append([]string{pub.Current}, slices.Sorted(maps.Keys(pub.Rules))...)
	for _, stamp := range candidates {
		kept := pub.Rules[stamp]
		if stamp == "" || stamp == planned || kept == nil || settle.Stamp(kept) != stamp || !settle.Keeps(kept, rules) {
			continue
		}
		return stamp, kept, true
	}
	return "", nil, false
}
