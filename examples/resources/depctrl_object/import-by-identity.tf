# An object is imported by its workspace, apiVersion, kind, namespace (left
# out for a cluster-scoped object) and name.
import {
  to = depctrl_object.vpc
  identity = {
    workspace_path = "root:team-a"
    api_version    = "network.example.io/v1"
    kind           = "VPC"
    namespace      = "apps"
    name           = "vpc-1"
  }
}
