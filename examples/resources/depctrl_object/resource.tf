# A tenant's VPC and the VirtualMachines that reference it, in the
# tenant's workspace. Nothing orders them: with deferred deletion on (the
# namespace below opts in), `terraform destroy` deletes them in any order
# and converges in one run. The VPC's deletion, refused while a VM still
# names it, is deferred: the dependency webhook deletes the VPC once the
# last VM is gone, and destroy waits for that.
resource "depctrl_object" "apps" {
  workspace_path = "root:team-a"
  manifest = yamlencode({
    apiVersion = "v1"
    kind       = "Namespace"
    metadata = {
      name        = "apps"
      annotations = { "dependencies.opendefense.cloud/defer-deletion" = "true" }
    }
  })
}

resource "depctrl_object" "vpc" {
  workspace_path = "root:team-a"
  manifest = yamlencode({
    apiVersion = "network.example.io/v1"
    kind       = "VPC"
    metadata   = { name = "vpc-1", namespace = "apps" }
    spec       = { cidr = "10.0.0.0/16" }
  })

  timeouts {
    delete = "10m"
  }

  depends_on = [depctrl_object.apps]
}

resource "depctrl_object" "vm" {
  for_each       = toset(["vm-1", "vm-2", "vm-3"])
  workspace_path = "root:team-a"
  manifest = yamlencode({
    apiVersion = "compute.example.io/v1"
    kind       = "VirtualMachine"
    metadata   = { name = each.key, namespace = "apps" }
    spec       = { vpcRef = { name = "vpc-1" } }
  })

  depends_on = [depctrl_object.apps]
}
