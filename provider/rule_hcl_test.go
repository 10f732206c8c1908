package provider

import "fmt"

// vmRule is the VM-needs-VPC rule of the acceptance tests, as HCL: VMs of
// the compute export reference a VPC of the network export at Field.
type vmRule struct {
	// Workspace and NetworkPath are HCL expressions: a quoted path or a
	// reference such as depctrl_provider_binding.compute.workspace_path.
	Workspace, NetworkPath string
	// Version is the dependent's version (v1 when empty); Field the
	// VPC's path in a VM (.spec.vpcRef.name when empty).
	Version, Field string
	// Extra goes at the end of the resource block.
	Extra string
}

// HCL renders the rule as depctrl_dependency_rule.<address>, named name.
func (r vmRule) HCL(address, name string) string {
	version, field := r.Version, r.Field
	if version == "" {
		version = "v1"
	}
	if field == "" {
		field = ".spec.vpcRef.name"
	}
	return fmt.Sprintf(`
resource "depctrl_dependency_rule" %q {
  workspace_path = %s
  name           = %q

  dependent {
    api_export_name = "compute.test.io"
    group           = "compute.test.io"
    version         = %q
    kind            = "VirtualMachine"
    resource        = "virtualmachines"
  }

  dependency {
    api_export_ref = { path = %s, name = "network.test.io" }
    group          = "network.test.io"
    version        = "v1"
    resource       = "vpcs"
    field_ref      = { path = %q }
  }
%s}
`, address, r.Workspace, name, version, r.NetworkPath, field, r.Extra)
}
