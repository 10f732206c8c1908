# A rule is imported by its workspace path and name.
import {
  to = depctrl_dependency_rule.vm_needs_vpc
  identity = {
    workspace_path = "root:compute"
    name           = "vm-needs-vpc"
  }
}
