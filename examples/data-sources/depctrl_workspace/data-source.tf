# The workspace that exports the network API.
data "depctrl_workspace" "network" {
  path = "root:org:network"
}

output "network_cluster" {
  value = data.depctrl_workspace.network.cluster
}

output "network_shard" {
  value = data.depctrl_workspace.network.shard
}
