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

# Where the runtime reaches the export on each shard: the URL the export's
# endpoint slice lists for a shard once a workspace there binds the export.
# Built from the shards, it is known at plan and does not change as
# workspaces bind the export.
data "depctrl_shards" "all" {}

output "export_virtual_workspace_urls" {
  value = { for s in data.depctrl_shards.all.shards :
    s.name => "${trimsuffix(s.virtual_workspace_url, "/")}/services/apiexport/${depctrl_workspace.dep_ctrl.cluster}/${depctrl_export.this.name}"
  }
}
