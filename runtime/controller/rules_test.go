package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// TestStatusEqual: a status is written when anything the webhook reads
// changed, the index epoch included.
func TestStatusEqual(t *testing.T) {
	base := func() *v1alpha1.DependencyRuleStatus {
		return &v1alpha1.DependencyRuleStatus{ObservedGeneration: 2, IndexEpoch: "uid-1", Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionIndexed, "True", "Indexed"),
		}}
	}
	tests := []struct {
		name  string
		edit  func(*v1alpha1.DependencyRuleStatus)
		equal bool
	}{
		{"same", func(*v1alpha1.DependencyRuleStatus) {}, true},
		{"new epoch", func(s *v1alpha1.DependencyRuleStatus) { s.IndexEpoch = "uid-2" }, false},
		{"epoch cleared", func(s *v1alpha1.DependencyRuleStatus) { s.IndexEpoch = "" }, false},
		{"index lost", func(s *v1alpha1.DependencyRuleStatus) {
			s.Conditions[0] = cond(v1alpha1.ConditionIndexed, "False", "ClaimNotAccepted")
		}, false},
		{"new generation", func(s *v1alpha1.DependencyRuleStatus) { s.ObservedGeneration = 3 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			after := base()
			tt.edit(after)
			if got := statusEqual(base(), after); got != tt.equal {
				t.Fatalf("statusEqual = %v, want %v", got, tt.equal)
			}
		})
	}
}
