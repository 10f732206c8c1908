package provider

import "fmt"

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
	// Extra goes at the end of the resource block.
	Extra string
}

// HCL renders the rule as depctrl_dependency_rule.<address>, named name.
func (r ruleHCL) HCL(address, name string) string {
	version := r.Version
	if version == "" {
		version = "v1"
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
`, address, r.Workspace, name, r.Group, version, r.Kind, r.Resource, r.ExportPath, r.DependencyGroup, r.DependencyResource, r.Field, r.Extra)
}

// vmRule is the VM-needs-VPC rule of the acceptance tests: VMs of the
// compute export reference a VPC of the network export at Field.
type vmRule struct {
	// Workspace and NetworkPath are HCL expressions, as in ruleHCL.
	Workspace, NetworkPath string
	// Version is the dependent's version (v1 when empty); Field the
	// VPC's path in a VM (.spec.vpcRef.name when empty).
	Version, Field string
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
		DependencyGroup: "network.test.io", DependencyResource: "vpcs", Field: field, Extra: r.Extra,
	}.HCL(address, name)
}
