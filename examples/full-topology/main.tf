# The whole depctrl topology: the dep-ctrl workspace and its export, the API
# provider workspaces that bind it, the RBAC in root and on every shard, the
# runtime, and the rules. README.md beside this file walks through it.

terraform {
  required_providers {
    depctrl = { source = "depctrl/depctrl" }
  }
}

provider "depctrl" {
  kubeconfig_path = var.kcp_kubeconfig

  kubernetes {
    kubeconfig_path = var.kube_kubeconfig
  }
}

# 1. The dep-ctrl workspace serves the DependencyRule API to everyone who
#    binds its export; the runtime identities may read it.
resource "depctrl_workspace" "dep_ctrl" {
  name        = "depctrl"
  parent_path = "root"
}

resource "depctrl_export" "this" {
  workspace_path = depctrl_workspace.dep_ctrl.path
  runtime_users  = [var.controller_user, var.webhook_user]
}

# 2. The controller resolves workspace paths by reading Workspaces in root
#    and in every parent of a nested provider workspace.
resource "depctrl_root_rbac" "this" {
  controller_users = [var.controller_user]
  parent_paths     = [depctrl_workspace.org.path]
}

# 3. Each shard authorizes the webhook's reads in consumer workspaces with
#    RBAC of its own, which only that shard's system:admin can write.
resource "depctrl_shard" "this" {
  for_each = var.shards

  name            = each.key
  kubeconfig_path = each.value
  webhook_users   = [var.webhook_user]
  read_resources  = var.dependent_types
  # The protected types, required with read_resources (the webhook patches
  # their objects to record each new reference and to settle them) and with
  # deferred_deletion (the only types it may delete).
  protected_resources = var.dependent_types == null && !var.deferred_deletion ? null : var.protected_types
  # Patch is granted only on named types: re-index when they are named.
  reindex = var.dependent_types != null
  # What the webhook needs to carry out the deletions it defers, on every
  # shard, when the runtime defers them (below).
  deferred_deletion = var.deferred_deletion
}

# 4. The runtime, in the cluster that hosts kcp. It needs the export and
#    the RBAC before it can become ready.
resource "depctrl_runtime" "this" {
  image = var.runtime_image

  # Points both kubeconfigs at the dep-ctrl workspace (kubeconfigs issued
  # for the front-proxy work as they are), and orders the runtime after the
  # export it reads.
  workspace_path = depctrl_export.this.workspace_path

  controller = {
    kubeconfig_path = var.controller_kubeconfig
    replicas        = 2
  }

  webhook = {
    kubeconfig_path = var.webhook_kubeconfig
    replicas        = 2
    url             = var.webhook_url
    # Opted-in objects whose deletion is refused for their dependents are
    # deleted by the webhook once the last dependent is gone.
    deferred_deletion = var.deferred_deletion
  }

  # Only kcp's shards may call the webhook; null keeps the default policy.
  network_policy = var.kcp_namespace == null ? null : {
    webhook_namespaces = [var.kcp_namespace]
    webhook_cidrs      = []
  }

  depends_on = [depctrl_root_rbac.this, depctrl_shard.this]
}

# 5. The API providers: networking in a nested workspace, compute at the
#    top. Each binds the export (claim accepted): network so that its VPCs
#    and FirewallRules can be protected, compute so that rules can live
#    there. Bindings come after the runtime, so that on destroy they go
#    first, while the controller can still remove its webhook
#    configurations.
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

# 6. The rules, in the workspace of the dependent type's provider. Each
#    waits until the webhook enforces it.
resource "depctrl_dependency_rule" "vm_needs_vpc" {
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
