package settle

import "testing"

// TestBridges: objects proven under the rules old may skip the webhook for a
// while under rules that only added some (and removed some): not when a
// rule old counts was edited, re-indexed or lost its index, when a rule
// references the type where writes go unseen, or when nothing was added.
func TestBridges(t *testing.T) {
	old := rulesOf("a", "b")
	edited := rulesOf("a", "b", "c")
	edited[0].Generation = 2
	reindexed := rulesOf("a", "b", "c")
	reindexed[1].IndexEpoch = "e-b2"
	live := func(rules []RuleRef) []Protecting {
		ps := make([]Protecting, len(rules))
		for i, r := range rules {
			ps[i] = Protecting{Rule: r, Live: true}
		}
		return ps
	}
	with := func(ps []Protecting, key string, change func(*Protecting)) []Protecting {
		for i := range ps {
			if ps[i].Rule.Key == key {
				change(&ps[i])
			}
		}
		return ps
	}
	tests := []struct {
		name string
		old  []RuleRef
		ps   []Protecting
		want bool
	}{
		{name: "a rule added", old: old, ps: live(rulesOf("a", "b", "c")), want: true},
		{name: "a rule added, its index not in place yet", old: old, ps: with(live(rulesOf("a", "b", "c")), "c/c", func(p *Protecting) { p.Live = false }), want: true},
		{name: "one rule removed, one added", old: old, ps: live(rulesOf("b", "c")), want: true},
		{name: "every rule replaced", old: old, ps: live(rulesOf("c")), want: true},
		{name: "an old rule's index no longer in place", old: old, ps: with(live(rulesOf("a", "b", "c")), "c/a", func(p *Protecting) { p.Live = false })},
		{name: "an old rule edited", old: old, ps: live(edited)},
		{name: "an old rule re-indexed", old: old, ps: live(reindexed)},
		{name: "the added rule references the type unseen", old: old, ps: with(live(rulesOf("a", "b", "c")), "c/c", func(p *Protecting) { p.Unseen = true })},
		{name: "nothing added: rules only removed", old: old, ps: live(rulesOf("a"))},
		{name: "the same rules", old: old, ps: live(old)},
		{name: "no old rules", old: nil, ps: live(rulesOf("a"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Bridges(tt.old, tt.ps); got != tt.want {
				t.Errorf("Bridges = %v, want %v", got, tt.want)
			}
		})
	}
}
