# A rule is imported by its workspace path and name.
terraform import depctrl_dependency_rule.vm_needs_vpc root:compute/vm-needs-vpc
