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

// Accepts reports whether objects settled under stamp skip the webhook.
func (p Publication) Accepts(stamp string) bool {
	_, ok := p.Rules[stamp]
	return ok && stamp != ""
}

// Justified reports whether every stamp p accepts may be: it is stamp, the
// stamp of the current rules refs, or its recorded rules hash to it and
// keep refs (Keeps).
func (p Publication) Justified(stamp string, refs []RuleRef) bool {
	for s, rules := range p.Rules {
		if s != stamp && (rules == nil || Stamp(rules) != s || !Keeps(rules, refs)) {
			return false
		}
	}
	return true
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
