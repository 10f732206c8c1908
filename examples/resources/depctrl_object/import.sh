# An object is imported by <workspace_path>/<apiVersion>/<kind>/<namespace>/<name>;
# a cluster-scoped object has an empty namespace (root:team-a/v1/Namespace//apps).
terraform import depctrl_object.vpc root:team-a/network.example.io/v1/VPC/apps/vpc-1
