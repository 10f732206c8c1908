package settle

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

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
