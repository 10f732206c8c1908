package provider

import (
	"fmt"
	"testing"

	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

// ruleFields are the parts of a rule the error cases vary.
type ruleFields struct {
	workspace, kind, version, exportPath, fieldPath string
	noDependency                                    bool
}

func (f ruleFields) config(e *env.Env) string {
	dependency := fmt.Sprintf(`
  dependency {
    api_export_ref = { path = %q, name = "network.example.io" }
    group          = "network.example.io"
    version        = "v1"
    resource       = "vpcs"
    field_ref      = { path = %q }
  }`, f.exportPath, f.fieldPath)
	if f.noDependency {
		dependency = ""
	}
	return providerConfig(e) + fmt.Sprintf(`
resource "depctrl_dependency_rule" "test" {
  workspace_path = %q
  name           = "vm-needs-vpc"

  dependent {
    api_export_name = "compute.example.io"
    group           = "compute.example.io"
    version         = %q
    kind            = %q
    resource        = "virtualmachines"
  }
%s
}
`, f.workspace, f.version, f.kind, dependency)
}

// The rule's lifecycle, import and drift, with the runtime enforcing it, are
// covered by TestAccTopology; these are the ways a rule is refused.
func TestAccDependencyRuleErrors(t *testing.T) {
	e := accEnv(t, env.SingleShard)
	unbound := testOrg(t, e)
	valid := ruleFields{workspace: "root:compute", kind: "VirtualMachine", version: "v1", exportPath: "root:org:network", fieldPath: ".spec.vpcRef.name"}
	with := func(change func(*ruleFields)) ruleFields {
		f := valid
		change(&f)
		return f
	}
	tests := []struct {
		name   string
		fields ruleFields
		want   string
	}{
		{
			name:   "lowercase kind",
			fields: with(func(f *ruleFields) { f.kind = "virtualMachine" }),
			want:   `(?s)Invalid DependencyRule.*dependent\.kind.*CamelCase kind`,
		},
		{
			name:   "field path without a leading dot",
			fields: with(func(f *ruleFields) { f.fieldPath = "spec.vpcRef.name" }),
			want:   `(?s)Invalid DependencyRule.*dependency\[0\]\.field_ref\.path`,
		},
		{
			name:   "list index instead of [*]",
			fields: with(func(f *ruleFields) { f.fieldPath = ".spec.networks[0].vpc" }),
			want:   `(?s)Invalid DependencyRule.*dependency\[0\]\.field_ref\.path`,
		},
		{
			name:   "version",
			fields: with(func(f *ruleFields) { f.version = "1" }),
			want:   `(?s)Invalid DependencyRule.*dependent\.version.*a version such as v1`,
		},
		{
			name:   "export path",
			fields: with(func(f *ruleFields) { f.exportPath = "root::network" }),
			want:   `(?s)Invalid DependencyRule.*dependency\[0\]\.api_export_ref\.path`,
		},
		{
			name:   "no dependency",
			fields: with(func(f *ruleFields) { f.noDependency = true }),
			want:   `Invalid Block[\s\S]*Block dependency must have a configuration value`,
		},
		{
			name:   "workspace without the binding",
			fields: with(func(f *ruleFields) { f.workspace = unbound.Path }),
			want:   `DependencyRules not available[\s\S]*has not bound the dep-ctrl\s+export[\s\S]*depctrl_provider_binding`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { testConfigFails(t, tt.fields.config(e), tt.want) })
	}
}
