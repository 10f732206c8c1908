# What still references vpc-1 in team-a, as deletion protection decides it now.
data "depctrl_references" "vpc" {
  workspace_path = "root:team-a"
  group          = "network.example.io"
  version        = "v1"
  resource       = "vpcs"
  namespace      = "default"
  name           = "vpc-1"
}

output "vpc_1_dependents" {
  value = [for d in data.depctrl_references.vpc.dependents : "${d.kind}/${d.name}"]
}

# Refuse to plan a change that needs vpc-1 gone while anything references it.
resource "terraform_data" "decommission_vpc_1" {
  lifecycle {
    precondition {
      condition     = !data.depctrl_references.vpc.referenced
      error_message = data.depctrl_references.vpc.message
    }
  }
}
