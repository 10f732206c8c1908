package controller

import (
	"maps"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
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

// holdBridged sets RulePlan.Bridged for each rule that a configuration
// still accepts a stamp without: the publications this run writes, or one
// of the configurations it read (configObjs, each read on its own: one that
// this run does not write, or that the webhook has not ended the bridge in
// yet), or one of them within Propagation before now, since kcp applies a
// changed configuration on every shard a moment after it is stored. It
// returns how long until a rule held for that last reason is no longer.
func (s *Syncer) holdBridged(plan *Plan, rules []RuleInput, protecting map[schema.GroupResource][]settle.Protecting, configObjs []process.ShardObject, name string, now time.Time) time.Duration {
	listed := []map[schema.GroupResource]settle.Publication{plan.Publications}
	for _, cfg := range configsNamed(configObjs, name) {
		listed = append(listed, settle.PublishedIn(cfg))
	}
	if s.bridgedAt == nil {
		s.bridgedAt = map[string]time.Time{}
	}
	present := map[string]bool{}
	var next time.Duration
	for _, r := range rules {
		rp := plan.Rules[r.Key]
		if rp == nil {
			continue
		}
		present[r.Key] = true
		if rp.Bridged = bridged(r, listed, protecting); rp.Bridged != "" {
			s.bridgedAt[r.Key] = now
			continue
		}
		at, ok := s.bridgedAt[r.Key]
		if !ok {
			continue
		}
		if left := s.Propagation - now.Sub(at); left > 0 {
			rp.Bridged = "the types it protects"
			if next == 0 || left < next {
				next = left
			}
			continue
		}
		delete(s.bridgedAt, r.Key)
	}
	for k := range s.bridgedAt {
		if !present[k] {
			delete(s.bridgedAt, k)
		}
	}
	return next
}

// configsNamed are the configurations called name among objs that are not
// being deleted, decoded.
func configsNamed(objs []process.ShardObject, name string) []*admissionregistrationv1.ValidatingWebhookConfiguration {
	var out []*admissionregistrationv1.ValidatingWebhookConfiguration
	for _, u := range byCluster(objs, name) {
		c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, c); err != nil || c.DeletionTimestamp != nil {
			continue
		}
		out = append(out, c)
	}
	return out
}

// bridged names a type r protects for which one of listed (publications
// by resource) accepts a stamp that lacks r as protecting lists it
// (settle.Publication.Lacks), "" when there is none.
func bridged(r RuleInput, listed []map[schema.GroupResource]settle.Publication, protecting map[schema.GroupResource][]settle.Protecting) string {
	for _, d := range r.Dependencies {
		gr := d.GVR.GroupResource()
		for _, p := range protecting[gr] {
			if p.Rule.Key != r.Key {
				continue
			}
			for _, pubs := range listed {
				if pub, ok := pubs[gr]; ok && pub.Lacks(p.Rule) {
					return groupResource(d.GVR)
				}
			}
		}
	}
	return ""
}
