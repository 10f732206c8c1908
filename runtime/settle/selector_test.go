package settle

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func TestSelector(t *testing.T) {
	for _, tc := range []struct {
		stamps []string
		labels map[string]string
		sent   bool
	}{
		{[]string{"abc"}, nil, true},
		{[]string{"abc"}, map[string]string{SettledLabel: "abc"}, false},
		{[]string{"abc"}, map[string]string{SettledLabel: "old"}, true},
		{[]string{"abc"}, map[string]string{SettledLabel: ""}, true},
		{[]string{"abc"}, map[string]string{"other": "abc"}, true},
		// A stamp kept beside the current one: objects settled under
		// either are left out.
		{[]string{"new", "old"}, map[string]string{SettledLabel: "new"}, false},
		{[]string{"new", "old"}, map[string]string{SettledLabel: "old"}, false},
		{[]string{"new", "old"}, map[string]string{SettledLabel: "older"}, true},
		{[]string{"new", "old"}, nil, true},
	} {
		sel, err := metav1.LabelSelectorAsSelector(Selector(tc.stamps...))
		if err != nil {
			t.Fatal(err)
		}
		if got := sel.Matches(labels.Set(tc.labels)); got != tc.sent {
			t.Errorf("stamps %v, labels %v: sent to the webhook = %v, want %v", tc.stamps, tc.labels, got, tc.sent)
		}
	}
	if got := StampsOf(Selector("abc")); !slices.Equal(got, []string{"abc"}) {
		t.Errorf("StampsOf(Selector(abc)) = %q", got)
	}
	if got := StampsOf(Selector("b", "", "a", "b")); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("StampsOf(Selector(b, \"\", a, b)) = %q, want [a b]", got)
	}
	for _, s := range []*metav1.LabelSelector{nil, Selector(), Selector(""), {MatchLabels: map[string]string{"a": "b"}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: SettledLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"abc"}}}}} {
		if got := StampsOf(s); len(got) != 0 {
			t.Errorf("StampsOf(%v) = %q, want none", s, got)
		}
	}
}
