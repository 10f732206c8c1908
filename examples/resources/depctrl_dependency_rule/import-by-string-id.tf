# <workspace path>/<rule name>
import {
  to = depctrl_dependency_rule.vm_needs_vpc
  id = "root:compute/vm-needs-vpc"
}
