resource "depctrl_workspace" "dep_ctrl" {
  name        = "depctrl"
  parent_path = "root"
}

# The DependencyRule API, served from the dep-ctrl workspace, and the access
# the runtime identities need there.
resource "depctrl_export" "this" {
  workspace_path = depctrl_workspace.dep_ctrl.path
  runtime_users  = ["depctrl-controller", "depctrl-webhook"]
}

output "export_identity" {
  value = depctrl_export.this.identity_hash
}
