package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
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
