package e2e

import "github.com/depctrl/terraform-provider-depctrl/test/fixtures"

type apiType = fixtures.APIType

var (
	vpcs            = fixtures.VPCs
	firewallRules   = fixtures.FirewallRules
	virtualMachines = fixtures.VirtualMachines
	managedDBs      = fixtures.ManagedDBs
	regions         = fixtures.Regions

	exportYAML  = fixtures.ExportYAML
	bindingYAML = fixtures.BindingYAML
	applyYAML   = fixtures.ApplyYAML
)
