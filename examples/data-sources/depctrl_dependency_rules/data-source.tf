data "depctrl_dependency_rules" "compute" {
  workspace_path = "root:compute"
}

output "rules_not_enforced" {
  value = [for r in data.depctrl_dependency_rules.compute.rules : r.name if !r.ready]
}
