package settle

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

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

func TestSelector(t *testing.T) {
	sel, err := metav1.LabelSelectorAsSelector(Selector("abc"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		labels map[string]string
		sent   bool
	}{
		{nil, true},
		{map[string]string{SettledLabel: "abc"}, false},
		{map[string]string{SettledLabel: "old"}, true},
		{map[string]string{SettledLabel: ""}, true},
		{map[string]string{"other": "abc"}, true},
	} {
		if got := sel.Matches(labels.Set(tc.labels)); got != tc.sent {
			t.Errorf("labels %v: sent to the webhook = %v, want %v", tc.labels, got, tc.sent)
		}
	}
	if got := StampOf(Selector("abc")); got != "abc" {
		t.Errorf("StampOf(Selector(abc)) = %q", got)
	}
	for _, s := range []*metav1.LabelSelector{nil, Selector(""), {MatchLabels: map[string]string{"a": "b"}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: SettledLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"abc"}}}}} {
		if got := StampOf(s); got != "" {
			t.Errorf("StampOf(%v) = %q, want none", s, got)
		}
	}
}
