# The DependencyRules in root:org:compute and every workspace below it,
# with their spec and whether each is Ready:
#   terraform query -generate-config-out=rules.tf
# writes an import block (by identity) and a depctrl_dependency_rule for
# each, to bring rules made by hand under Terraform.
list "depctrl_dependency_rule" "compute" {
  provider         = depctrl
  include_resource = true

  config {
    workspace_path = "root:org:compute"
    recursive      = true
  }
}
