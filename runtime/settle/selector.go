package settle

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Selector selects every object except those settled under one of stamps:
// objects without the label, and with any other value, are selected. No
// stamp ("" counts as none) selects everything.
func Selector(stamps ...string) *metav1.LabelSelector {
	values := accepted(stamps)
	if len(values) == 0 {
		return &metav1.LabelSelector{}
	}
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: SettledLabel, Operator: metav1.LabelSelectorOpNotIn, Values: values,
	}}}
}

// StampsOf are the stamps whose settled objects s leaves out, sorted; none
// when s selects every object or is not a selector Selector makes.
func StampsOf(s *metav1.LabelSelector) []string {
	if s == nil || len(s.MatchLabels) != 0 || len(s.MatchExpressions) != 1 {
		return nil
	}
	r := s.MatchExpressions[0]
	if r.Key != SettledLabel || r.Operator != metav1.LabelSelectorOpNotIn {
		return nil
	}
	return accepted(r.Values)
}

// accepted is stamps sorted, without "" and duplicates.
func accepted(stamps []string) []string {
	out := slices.DeleteFunc(slices.Clone(stamps), func(s string) bool { return s == "" })
	slices.Sort(out)
	return slices.Compact(out)
}

// GuardCondition is the match condition of the entry that sends the webhook
// every create or update that sets the label or changes its value.
// Removing the label is left alone: it only unsettles.
const GuardCondition = "has(object.metadata.labels) && '" + SettledLabel + "' in object.metadata.labels && " +
	"(oldObject == null || !has(oldObject.metadata.labels) || !('" + SettledLabel + "' in oldObject.metadata.labels) || " +
	"oldObject.metadata.labels['" + SettledLabel + "'] != object.metadata.labels['" + SettledLabel + "'])"
