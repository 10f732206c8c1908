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

// TestStampGolden pins settle stamps as earlier versions computed them: the
// controller publishes them and webhook replicas of other versions compare
// them during a rolling upgrade, so a change would unsettle every object
// once.
func TestStampGolden(t *testing.T) {
	for _, tt := range []struct {
		name string
		refs []RuleRef
		want string
	}{
		{"one rule", []RuleRef{{Key: "c1/vms", UID: "u1", Generation: 1, IndexEpoch: "e1"}}, "54ea328b97777285db40"},
		{"two rules", []RuleRef{
			{Key: "c1/vms", UID: "u1", Generation: 1, IndexEpoch: "e1"},
			{Key: "c2/subnets", UID: "u2", Generation: 3, IndexEpoch: "e2"},
		}, "44237dbe9c53559609be"},
		{"kcp paths and UIDs, one rule without an epoch", []RuleRef{
			{Key: "root:org:team/vm-rule", UID: "5f0c6a2e-1b7d-4c3a-9e8f-2d4b6a8c0e1f", Generation: 12, IndexEpoch: "9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d"},
			{Key: "root:org:team/db-rule", UID: "0b1c2d3e-4f5a-4b6c-7d8e-9f0a1b2c3d4e", Generation: 2, IndexEpoch: "9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d"},
			{Key: "root:other/fw-rule", UID: "u3", Generation: 1},
		}, "2d632b50c8ee9490eda3"},
		{"empty fields", []RuleRef{{Key: "c1/vms"}}, "ce94f7bccf3a90efa620"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Stamp(tt.refs); got != tt.want {
				t.Errorf("Stamp = %q, want %q", got, tt.want)
			}
			if got := Fingerprint("", tt.refs); got != tt.want {
				t.Errorf(`Fingerprint("") = %q, want the settle stamp %q`, got, tt.want)
			}
		})
	}
}

// TestFingerprint: a fingerprint is of a set of rules, and the salt tells
// apart fingerprints of the same set for other purposes.
func TestFingerprint(t *testing.T) {
	a := RuleRef{Key: "c1/vms", UID: "u1", Generation: 1, IndexEpoch: "e1"}
	b := RuleRef{Key: "c2/subnets", UID: "u2", Generation: 3, IndexEpoch: "e2"}
	base := Fingerprint("index", []RuleRef{a, b})
	for _, tt := range []struct {
		name string
		salt string
		refs []RuleRef
		same bool
	}{
		{"order does not matter", "index", []RuleRef{b, a}, true},
		{"another salt", "other", []RuleRef{a, b}, false},
		{"no salt", "", []RuleRef{a, b}, false},
		{"a rule edited", "index", []RuleRef{{Key: a.Key, UID: a.UID, Generation: 2, IndexEpoch: a.IndexEpoch}, b}, false},
		{"a rule re-indexed", "index", []RuleRef{{Key: a.Key, UID: a.UID, Generation: a.Generation, IndexEpoch: "e9"}, b}, false},
		{"a rule recreated", "index", []RuleRef{{Key: a.Key, UID: "u9", Generation: a.Generation, IndexEpoch: a.IndexEpoch}, b}, false},
		{"a rule removed", "index", []RuleRef{a}, false},
		{"a salt with a newline", "index\nc1/vms", []RuleRef{b}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Fingerprint(tt.salt, tt.refs)
			if len(got) != stampLength || (got == base) != tt.same {
				t.Errorf("Fingerprint = %q, base %q: same %v, want %v", got, base, got == base, tt.same)
			}
		})
	}
	if got := Fingerprint("index", nil); got != "" {
		t.Errorf("no rules: Fingerprint = %q, want none", got)
	}
	// A NUL byte would let the salt pass for a rule's line: salt
	// "index\n"+a's line with b hashes what salt "index" with a and b does.
	defer func() {
		if recover() == nil {
			t.Error("a salt with a NUL byte did not panic")
		}
	}()
	Fingerprint("index\nc1/vms\x00u1\x001\x00e1", []RuleRef{b})
}
