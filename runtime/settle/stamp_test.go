package settle

import "testing"

func TestStamp(t *testing.T) {
	a := RuleRef{Key: "c1/vms", UID: "u1", Generation: 1, IndexEpoch: "e1"}
	b := RuleRef{Key: "c2/subnets", UID: "u2", Generation: 3, IndexEpoch: "e2"}
	base := Stamp([]RuleRef{a, b})
	if base == "" || len(base) != stampLength {
		t.Fatalf("Stamp = %q, want %d hex digits", base, stampLength)
	}
	if got := Stamp([]RuleRef{b, a}); got != base {
		t.Errorf("order changed the stamp: %q vs %q", got, base)
	}
	if Stamp(nil) != "" {
		t.Errorf("no rules must give no stamp")
	}
	changed := func(f func(*RuleRef)) []RuleRef { c := a; f(&c); return []RuleRef{c, b} }
	for name, refs := range map[string][]RuleRef{
		"recreated":      changed(func(r *RuleRef) { r.UID = "u9" }),
		"edited":         changed(func(r *RuleRef) { r.Generation = 2 }),
		"new index":      changed(func(r *RuleRef) { r.IndexEpoch = "e9" }),
		"rule removed":   {a},
		"rule added":     {a, b, {Key: "c3/x", UID: "u3", Generation: 1}},
		"key moved":      changed(func(r *RuleRef) { r.Key = "c1/vms2" }),
		"fields shifted": changed(func(r *RuleRef) { r.Key, r.UID = "c1/vms\x00u1", "" }),
	} {
		if got := Stamp(refs); got == base {
			t.Errorf("%s: the stamp did not change", name)
		}
	}
}

// TestStampFor: the stamp counts each rule once, and objects may be settled
// under it only while every rule's index configuration is live and none
// references the type where no index webhook sees the writes.
func TestStampFor(t *testing.T) {
	a := RuleRef{Key: "c1/vms", UID: "u1", Generation: 1, IndexEpoch: "e1"}
	b := RuleRef{Key: "c2/subnets", UID: "u2", Generation: 3, IndexEpoch: "e2"}
	both := Stamp([]RuleRef{a, b})
	for _, tt := range []struct {
		name       string
		ps         []Protecting
		wantStamp  string
		settleable bool
	}{
		{"none", nil, "", false},
		{"two live rules", []Protecting{{Rule: a, Live: true}, {Rule: b, Live: true}}, both, true},
		{"a rule listed twice counts once", []Protecting{{Rule: a, Live: true}, {Rule: b, Live: true}, {Rule: a, Live: true}}, both, true},
		{"an index not live", []Protecting{{Rule: a, Live: true}, {Rule: b}}, both, false},
		{"a second listing unseen", []Protecting{{Rule: a, Live: true}, {Rule: b, Live: true}, {Rule: a, Live: true, Unseen: true}}, both, false},
	} {
		stamp, ok := StampFor(tt.ps)
		if stamp != tt.wantStamp || ok != tt.settleable {
			t.Errorf("%s: StampFor = %q, %v; want %q, %v", tt.name, stamp, ok, tt.wantStamp, tt.settleable)
		}
	}
}
