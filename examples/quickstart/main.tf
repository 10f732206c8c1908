# The quickstart topology: everything depctrl needs in a kcp with two shards.
# `make quickstart` applies it against a local kcp; README.md explains each
# part.

terraform {
  required_providers {
    depctrl = { source = "depctrl/depctrl" }
  }
}

provider "depctrl" {
  kubeconfig_path = var.kcp_kubeconfig

  # Where the runtime runs: in a real installation, the cluster hosting kcp.
  kubernetes {
    kubeconfig_path = var.kube_kubeconfig
  }
}

# The workspace that serves the DependencyRule API, and the API itself.
resource "depctrl_workspace" "dep_ctrl" {
  name        = "depctrl"
  parent_path = "root"
}

resource "depctrl_export" "this" {
  workspace_path = depctrl_workspace.dep_ctrl.path
  runtime_users  = [var.controller_user, var.webhook_user]
}

# The runtime: controller and webhook, each with its own kcp identity. The
# webhook's certificate is generated; the controller hands its CA to kcp.
resource "depctrl_runtime" "this" {
  namespace = "depctrl-system"

  # Points both kubeconfigs at the dep-ctrl workspace, and orders the
  # runtime after the export it reads.
  workspace_path = depctrl_export.this.workspace_path

  controller = {
    kubeconfig_path = var.controller_kubeconfig
  }

  webhook = {
    kubeconfig_path = var.webhook_kubeconfig
    url             = var.webhook_url
  }

  # The local API server has no nodes: depctrl-podrunner runs the binaries
  # built here, so no image of this tag needs to exist. A real installation
  # leaves image_tag unset (the provider's version) or names an image it
  # pushed.
  image_tag = "local"

  # It rolls out once its RBAC exists.
  depends_on = [depctrl_root_rbac.this, depctrl_shard.this]
}

# Two API providers: networking in a nested workspace, compute at the top.
resource "depctrl_workspace" "org" {
  name        = "org"
  parent_path = "root"
}

resource "depctrl_workspace" "network" {
  name        = "network"
  parent_path = depctrl_workspace.org.path
}

resource "depctrl_workspace" "compute" {
  name        = "compute"
  parent_path = "root"
}

# Both bind the dep-ctrl export: VPCs in network are protected, and rules
# live in compute. Bindings (and the rules in them) come after the runtime,
# so that on destroy they go first, while the controller can still remove
# the webhook configurations it installed.
resource "depctrl_provider_binding" "network" {
  workspace_path = depctrl_workspace.network.path
  export_path    = depctrl_export.this.workspace_path
  export_name    = depctrl_export.this.name
  depends_on     = [depctrl_runtime.this]
}

resource "depctrl_provider_binding" "compute" {
  workspace_path = depctrl_workspace.compute.path
  export_path    = depctrl_export.this.workspace_path
  export_name    = depctrl_export.this.name
  depends_on     = [depctrl_runtime.this]
}

# The controller resolves root:org:network by reading workspaces in root and
# root:org.
resource "depctrl_root_rbac" "this" {
  controller_users = [var.controller_user]
  parent_paths     = [depctrl_workspace.org.path]
}

# One consumer workspace and one depctrl_shard per shard: adding a shard is
# adding an entry to var.shards.
resource "depctrl_workspace" "consumer" {
  for_each = var.shards

  name           = "tenant-${each.key}"
  parent_path    = "root"
  shard_selector = { name = each.key }
}

resource "depctrl_shard" "this" {
  for_each = var.shards

  name            = each.key
  kubeconfig_path = each.value
  webhook_users   = [var.webhook_user]
}

# The rules: a VPC cannot be deleted while a VirtualMachine names it, and a
# FirewallRule not while a ManagedDB lists it.
resource "depctrl_dependency_rule" "vm_needs_vpc" {
  count = var.install_rules ? 1 : 0

  workspace_path = depctrl_provider_binding.compute.workspace_path
  name           = "vm-needs-vpc"

  dependent {
    api_export_name = "compute.test.io"
    group           = "compute.test.io"
    version         = "v1"
    kind            = "VirtualMachine"
    resource        = "virtualmachines"
  }

  dependency {
    api_export_ref = { path = depctrl_provider_binding.network.workspace_path, name = "network.test.io" }
    group          = "network.test.io"
    version        = "v1"
    resource       = "vpcs"
    field_ref      = { path = ".spec.vpcRef.name" }
  }
}

resource "depctrl_dependency_rule" "db_needs_firewall" {
  count = var.install_rules ? 1 : 0

  workspace_path = depctrl_provider_binding.compute.workspace_path
  name           = "db-needs-firewall"

  dependent {
    api_export_name = "compute.test.io"
    group           = "compute.test.io"
    version         = "v1"
    kind            = "ManagedDB"
    resource        = "manageddbs"
  }

  dependency {
    api_export_ref = { path = depctrl_provider_binding.network.workspace_path, name = "network.test.io" }
    group          = "network.test.io"
    version        = "v1"
    resource       = "firewallrules"
    field_ref      = { path = ".spec.firewalls[*].name" }
  }
}
