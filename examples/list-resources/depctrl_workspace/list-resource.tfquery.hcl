# Every workspace below root:org, with its logical cluster and shard:
#   terraform query -generate-config-out=workspaces.tf
# writes an import block (by identity) and a depctrl_workspace for each.
list "depctrl_workspace" "org" {
  provider         = depctrl
  include_resource = true

  config {
    parent_path = "root:org"
    recursive   = true
  }
}
