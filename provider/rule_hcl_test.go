package provider

import (
	"fmt"
	"strings"
	"testing"
)

// ruleHCL is a depctrl_dependency_rule of the acceptance tests, as HCL.
// The test exports are named after their groups, and serve v1.
type ruleHCL struct {
	// Workspace and ExportPath (the dependency's export workspace) are HCL
	// expressions: a quoted path or a reference such as
	// depctrl_provider_binding.compute.workspace_path.
	Workspace, ExportPath string
	// The dependent type; Version is v1 when empty.
	Group, Version, Kind, Resource string
	// The dependency type, and where a dependent names it.
	DependencyGroup, DependencyResource, Field string
	// DeferDeletion is defer_deletion as an HCL expression, such as true;
	// empty leaves the attribute out, so its default applies.
	DeferDeletion string
	// Extra goes at the end of the resource block.
	Extra string
}

// HCL renders the rule as depctrl_dependency_rule.<address>, named name.
func (r ruleHCL) HCL(address, name string) string {
	version := r.Version
	if version == "" {
		version = "v1"
	}
	extra := r.Extra
	if r.DeferDeletion != "" {
		extra = "  defer_deletion = " + r.DeferDeletion + "\n" + extra
	}
	return fmt.Sprintf(`
resource "depctrl_dependency_rule" %q {
  workspace_path = %s
  name           = %q

  dependent {
    api_export_name = %q
    group           = %[4]q
    version         = %q
    kind            = %q
    resource        = %q
  }

  dependency {
    api_export_ref = { path = %s, name = %q }
    group          = %[9]q
    version        = "v1"
    resource       = %q
    field_ref      = { path = %q }
  }
%s}
`, address, r.Workspace, name, r.Group, version, r.Kind, r.Resource, r.ExportPath, r.DependencyGroup, r.DependencyResource, r.Field, extra)
}

// vmRule is the VM-needs-VPC rule of the acceptance tests: VMs of the
// compute export reference a VPC of the network export at Field.
type vmRule struct {
	// Workspace and NetworkPath are HCL expressions, as in ruleHCL.
	Workspace, NetworkPath string
	// Version is the dependent's version (v1 when empty); Field the
	// VPC's path in a VM (.spec.vpcRef.name when empty).
	Version, Field string
	// DeferDeletion is as in ruleHCL.
	DeferDeletion string
	// Extra goes at the end of the resource block.
	Extra string
}

// HCL renders the rule as depctrl_dependency_rule.<address>, named name.
func (r vmRule) HCL(address, name string) string {
	field := r.Field
	if field == "" {
		field = ".spec.vpcRef.name"
	}
	return ruleHCL{
		Workspace: r.Workspace, ExportPath: r.NetworkPath,
		Group: "compute.test.io", Version: r.Version, Kind: "VirtualMachine", Resource: "virtualmachines",
		DependencyGroup: "network.test.io", DependencyResource: "vpcs", Field: field, DeferDeletion: r.DeferDeletion, Extra: r.Extra,
	}.HCL(address, name)
}

// TestRuleHCLDeferDeletion: the acceptance tests' rules set defer_deletion
// only when asked, inside the resource block and before what Extra adds.
func TestRuleHCLDeferDeletion(t *testing.T) {
	for _, tt := range []struct {
		name, deferDeletion string
		// wantEnd is how the block ends; empty: defer_deletion left out.
		wantEnd string
	}{
		{"left out", "", ""},
		{"true", "true", "\n  defer_deletion = true\n  # extra\n}\n"},
		{"false", "false", "\n  defer_deletion = false\n  # extra\n}\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hcl := vmRule{Workspace: `"root:compute"`, NetworkPath: `"root:org:network"`, DeferDeletion: tt.deferDeletion, Extra: "  # extra\n"}.HCL("vm_needs_vpc", "vm-needs-vpc")
			if tt.wantEnd == "" && strings.Contains(hcl, "defer_deletion") {
				t.Errorf("defer_deletion set though not asked for:\n%s", hcl)
			}
			if tt.wantEnd != "" && (!strings.HasSuffix(hcl, tt.wantEnd) || strings.Count(hcl, "defer_deletion") != 1) {
				t.Errorf("the block does not end with %q, setting defer_deletion once:\n%s", tt.wantEnd, hcl)
			}
		})
	}
}
