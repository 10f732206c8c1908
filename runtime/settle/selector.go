package settle

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Selector selects every object except those settled under stamp: objects
// without the label, and with any other value, are selected. An empty stamp
// selects everything.
func Selector(stamp string) *metav1.LabelSelector {
	if stamp == "" {
		return &metav1.LabelSelector{}
	}
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: SettledLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{stamp},
	}}}
}

// StampOf is the stamp whose settled objects s leaves out, "" when s
// selects every object.
func StampOf(s *metav1.LabelSelector) string {
	if s == nil || len(s.MatchLabels) != 0 || len(s.MatchExpressions) != 1 {
		return ""
	}
	r := s.MatchExpressions[0]
	if r.Key != SettledLabel || r.Operator != metav1.LabelSelectorOpNotIn || len(r.Values) != 1 {
		return ""
	}
	return r.Values[0]
}

// GuardCondition is the match condition of the entry that sends the webhook
// every create or update that sets the label or changes its value.
// Removing the label is left alone: it only unsettles.
const GuardCondition = "has(object.metadata.labels) && '" + SettledLabel + "' in object.metadata.labels && " +
	"(oldObject == null || !has(oldObject.metadata.labels) || !('" + SettledLabel + "' in oldObject.metadata.labels) || " +
	"oldObject.metadata.labels['" + SettledLabel + "'] != object.metadata.labels['" + SettledLabel + "'])"
