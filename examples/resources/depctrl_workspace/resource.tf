resource "depctrl_workspace" "org" {
  name        = "org"
  parent_path = "root"
}

# The workspace that exports the network API, nested in the organization.
resource "depctrl_workspace" "network" {
  name        = "network"
  parent_path = depctrl_workspace.org.path
  type        = "root:universal"

  timeouts {
    create = "10m"
  }
}

# A consumer workspace pinned to a shard labelled name=shard-1.
resource "depctrl_workspace" "tenant" {
  name           = "tenant-a"
  parent_path    = depctrl_workspace.org.path
  shard_selector = { name = "shard-1" }
}
