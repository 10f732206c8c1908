package settle

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// Publication is what a protection configuration publishes for one
// resource: the stamps whose settled objects its deletion entries leave
// out, and the rules each stands for. Besides the stamp of the rules as the
// controller planned them (Current), it may keep accepting an older one
// whose rules are a superset of the current ones (Keeps: rules were only
// removed since), so that objects settled under it stay settled until the
// settler has labelled them anew, instead of all going back to the webhook
// at every rule removal.
type Publication struct {
	// Current is the stamp of the rules as planned, "" while it is held
	// back or none is published.
	Current string
	// Rules maps every stamp the entries accept (Current among them) to
	// the rules it was computed from, nil for one whose rules are not known
	// (a configuration written before they were recorded, or a value no
	// controller wrote): such a stamp is not Justified.
	Rules map[string][]RuleRef
}

// Stamps are the stamps p accepts, sorted.
func (p Publication) Stamps() []string {
	return slices.Sorted(maps.Keys(p.Rules))
}

// sameAs reports whether p and q accept the same stamps and call the same
// one current: two entries or configurations that agree.
func (p Publication) sameAs(q Publication) bool {
	return p.Current == q.Current && slices.Equal(p.Stamps(), q.Stamps())
}

// within is p accepting only the stamps q accepts too.
func (p Publication) within(q Publication) Publication {
	out := Publication{Current: p.Current, Rules: map[string][]RuleRef{}}
	for s, rules := range p.Rules {
		if q.Accepts(s) {
			out.Rules[s] = rules
		}
	}
	return out
}

// Accepts reports whether objects settled under stamp skip the webhook.
func (p Publication) Accepts(stamp string) bool {
	_, ok := p.Rules[stamp]
	return ok && stamp != ""
}

// Justified reports whether every stamp p accepts may be: it is stamp, the
// stamp of the current rules ps, or its recorded rules hash to it and keep
// the current ones (Keeps), or, for one p does not call current, bridge to
// them (Bridges). Only the controller makes a bridge, of a stamp it called
// current before: one still called current beside rules that lack it is
// the controller's view of rules that changed since (it may be down), or,
// to a replica cut off from the rules, of rules it has not seen change.
func (p Publication) Justified(stamp string, ps []Protecting) bool {
	for s := range p.Rules {
		if s != stamp && !p.Kept(s, ps) && (s == p.Current || !p.Bridges(s, ps)) {
			return false
		}
	}
	return true
}

// recorded are the rules p records for stamp, nil unless they hash to it.
func (p Publication) recorded(stamp string) []RuleRef {
	rules := p.Rules[stamp]
	if rules == nil || Stamp(rules) != stamp {
		return nil
	}
	return rules
}

// Kept reports whether p accepts stamp as one kept from rules that were
// only removed since: its recorded rules keep the current ones ps.
func (p Publication) Kept(stamp string, ps []Protecting) bool {
	rules := p.recorded(stamp)
	return rules != nil && Keeps(rules, RulesOf(ps))
}

// Bridges reports whether p accepts stamp as a bridge to the current rules
// ps: its recorded rules bridge to them (Bridges).
func (p Publication) Bridges(stamp string, ps []Protecting) bool {
	rules := p.recorded(stamp)
	return rules != nil && Bridges(rules, ps)
}

// Bridged are the stamps p accepts as bridges to the current rules ps: not
// as kept ones, nor called current (Justified).
func (p Publication) Bridged(ps []Protecting) []string {
	var out []string
	for _, s := range p.Stamps() {
		if s != p.Current && p.Bridges(s, ps) && !p.Kept(s, ps) {
			out = append(out, s)
		}
	}
	return out
}

// Keeps reports whether objects proven unreferenced under the rules old
// stay proven under the rules current: every rule of current is one of old,
// with the same UID, generation and index epoch. A rule added, edited,
// recreated or re-indexed since breaks it: its references were never
// looked for, or writes may have gone by its index unseen. A rule removed
// does not: a proof under more rules holds under fewer, and the index
// webhooks of the rules that remain have recorded every intent since.
func Keeps(old, current []RuleRef) bool {
	if len(current) == 0 {
		return false
	}
	for _, r := range current {
		if !slices.Contains(old, r) {
			return false
		}
	}
	return true
}

// Bridges reports whether objects proven unreferenced under the rules old
// may keep skipping the webhook for a while after rules were added over
// their type, ps being the rules now: every rule of ps that old knows (by
// UID) is in old as it was, with the same generation and index epoch, and
// its index configuration is still live; at least one rule of ps is new;
// and none references the type at a path no index webhook sees written.
// Rules of old that ps lacks were removed, which Keeps allows too.
//
// Such a proof says nothing of the new rules: a dependent written before
// one of them may reference any object. So objects settled under old keep
// skipping the webhook only while the new rules are not reported Ready
// (the controller holds their Ready back while any configuration accepts a
// stamp that lacks them), and only until the settler has had the time to
// prove them again under the new rules (PublishedGuard, TransitionFor): the
// new rules protect them from then on, which is what their Ready says. An
// edit, a re-index or a path that writes can take unseen breaks it, as it
// breaks Keeps: references made under the rules old counts may then have
// gone by unseen.
func Bridges(old []RuleRef, ps []Protecting) bool {
	if len(old) == 0 {
		return false
	}
	uids := make(map[string]bool, len(old))
	for _, r := range old {
		uids[r.UID] = true
	}
	added := false
	for _, p := range ps {
		switch {
		case p.Unseen:
			return false
		case !uids[p.Rule.UID]:
			added = true
		case !p.Live || !slices.Contains(old, p.Rule):
			return false
		}
	}
	return added
}

// Lacks reports whether p accepts a stamp whose recorded rules lack rule:
// objects settled under it skip the webhook without a proof under rule. A
// stamp whose rules are not recorded counts as lacking it.
func (p Publication) Lacks(rule RuleRef) bool {
	for s := range p.Rules {
		if !slices.Contains(p.recorded(s), rule) {
			return true
		}
	}
	return false
}

// StampsAnnotation on a protection configuration records, for the stamps
// its deletion entries accept, the current one and the rules each stands
// for (stampsRecord, in JSON): what lets every webhook replica check a
// stamp kept from older rules (Publication.Justified), and the controller
// decide whether to keep one, after a restart too.
const StampsAnnotation = v1alpha1.Group + "/stamps"

// maxStampsRecord bounds the annotation: annotations of one object hold
// 256 KiB at most. A larger record is left out, and then no stamp is kept
// at the next rule removal.
const maxStampsRecord = 128 << 10

// stampsRecord is the StampsAnnotation's value.
type stampsRecord struct {
	// Current maps each resource ("resource.group") to its current stamp.
	Current map[string]string `json:"current,omitempty"`
	// Rules maps each stamp to its rules.
	Rules map[string][]RuleRef `json:"rules,omitempty"`
}

// StampsRecord is the StampsAnnotation value for pubs, by resource; ""
// when it would be too large to keep.
func StampsRecord(pubs map[string]Publication) string {
	rec := stampsRecord{Current: map[string]string{}, Rules: map[string][]RuleRef{}}
	for gr, p := range pubs {
		if p.Current != "" {
			rec.Current[gr] = p.Current
		}
		for s, rules := range p.Rules {
			if rules != nil {
				rec.Rules[s] = rules
			}
		}
	}
	if len(rec.Current) == 0 && len(rec.Rules) == 0 {
		return ""
	}
	// Maps of strings and of structs of strings always encode.
	b, _ := json.Marshal(rec)
	if len(b) > maxStampsRecord {
		return ""
	}
	return string(b)
}

// readStampsRecord reads a StampsAnnotation value; a malformed one records
// nothing.
func readStampsRecord(value string) stampsRecord {
	var rec stampsRecord
	if value == "" || json.Unmarshal([]byte(value), &rec) != nil {
		return stampsRecord{}
	}
	return rec
}
