# <workspace_path>/<apiVersion>/<kind>/<namespace>/<name>. The imported
# manifest holds only what names the object, so the plan after the import
# shows an update of manifest to the configured one.
import {
  to = depctrl_object.vpc
  id = "root:team-a/network.example.io/v1/VPC/apps/vpc-1"
}
