# VirtualMachines (exported from root:compute) name their VPC (exported
# from root:org:network) in .spec.vpcRef.name: a VPC cannot be deleted while
# a VM in the same consumer workspace still names it.
resource "depctrl_dependency_rule" "vm_needs_vpc" {
  workspace_path = "root:compute"
  name           = "vm-needs-vpc"

  dependent {
    api_export_name = "compute.example.io"
    group           = "compute.example.io"
    version         = "v1"
    kind            = "VirtualMachine"
    resource        = "virtualmachines"
  }

  dependency {
    api_export_ref = { path = "root:org:network", name = "network.example.io" }
    group          = "network.example.io"
    version        = "v1"
    resource       = "vpcs"
    field_ref      = { path = ".spec.vpcRef.name" }
  }

  # A list of references: any element that names the subnet counts.
  dependency {
    api_export_ref = { path = "root:org:network", name = "network.example.io" }
    group          = "network.example.io"
    version        = "v1"
    resource       = "subnets"
    field_ref      = { path = ".spec.interfaces[*].subnet" }
  }

  # A deletion of a VPC or subnet refused for its VMs is deferred: the
  # webhook deletes the object once no VM names it any more. It needs
  # webhook.deferred_deletion on depctrl_runtime and deferred_deletion on
  # every depctrl_shard; the defer-deletion annotation on the object, or on
  # its namespace, overrides it.
  defer_deletion = true

  timeouts {
    create = "5m"
  }
}
