# The network provider's workspace binds the dep-ctrl export, so that its
# VPCs can be protected and rules can live there.
resource "depctrl_provider_binding" "network" {
  workspace_path = "root:org:network"
  export_path    = "root:depctrl"
  export_name    = "dependencies.opendefense.cloud"
}
