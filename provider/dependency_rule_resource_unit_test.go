package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

func TestAttributePath(t *testing.T) {
	for field, want := range map[string]string{
		"spec.dependent.apiExportName":           "dependent.api_export_name",
		"spec.dependent.kind":                    "dependent.kind",
		"spec.dependencies":                      "dependency",
		"spec.dependencies[2].fieldRef.path":     "dependency[2].field_ref.path",
		"spec.dependencies[0].apiExportRef.name": "dependency[0].api_export_ref.name",
		"spec.dependencies[11].version":          "dependency[11].version",
	} {
		if got := attributePath(field).String(); got != want {
			t.Errorf("%s: got %s, want %s", field, got, want)
		}
	}
}

func TestRuleSpecSkipsUnknownValues(t *testing.T) {
	s := types.StringValue
	m := ruleModel{
		Dependent: &ruleDependentModel{APIExportName: s("compute.example.io"), Group: s("compute.example.io"), Version: s("v1"), Kind: s("VirtualMachine"), Resource: s("virtualmachines")},
		Dependencies: []ruleDependencyModel{{
			APIExportRef: &ruleExportRefModel{Path: types.StringUnknown(), Name: s("network.example.io")},
			Group:        s("network.example.io"), Version: s("v1"), Resource: s("vpcs"),
			FieldRef: &ruleFieldRefModel{Path: s("spec.vpc")},
		}},
	}
	spec, unknown := m.spec()
	var reported []string
	for _, e := range spec.Validate(nil) {
		if !unknown["spec."+e.Field] && !unknown[e.Field] {
			reported = append(reported, e.Field)
		}
	}
	// The unknown path is not reported; the malformed field path is.
	if len(reported) != 1 || reported[0] != "dependencies[0].fieldRef.path" {
		t.Fatalf("reported %v, want only the field path", reported)
	}
}

// TestRuleStateNamesWhatHoldsTheRuleBack: the missing reference index never
// holds a rule back, so a timeout does not send anyone after it.
func TestRuleStateNamesWhatHoldsTheRuleBack(t *testing.T) {
	condition := func(typ, status, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason, Message: reason + " message"}
	}
	tests := []struct {
		name  string
		conds []metav1.Condition
		want  string
	}{{
		name: "index missing, webhook propagating",
		conds: []metav1.Condition{
			condition(v1alpha1.ConditionWebhookInstalled, "False", "Propagating"),
			condition(v1alpha1.ConditionIndexed, "False", "ClaimNotAccepted"),
			condition(v1alpha1.ConditionReady, "False", "Propagating"),
		},
		want: "WebhookInstalled=False Propagating: Propagating message",
	}, {
		name: "only the index missing",
		conds: []metav1.Condition{
			condition(v1alpha1.ConditionIndexed, "False", "ClaimNotAccepted"),
			condition(v1alpha1.ConditionReady, "False", "NotYetEnforced"),
		},
		want: "Ready=False NotYetEnforced: NotYetEnforced message",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule := &v1alpha1.DependencyRule{Status: v1alpha1.DependencyRuleStatus{Conditions: tt.conds}}
			if got := ruleState(rule); got != tt.want {
				t.Fatalf("ruleState = %q, want %q", got, tt.want)
			}
		})
	}
}
