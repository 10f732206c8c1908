# The controller resolves apiExportRef paths such as root:org:network by
# reading Workspace objects in root and in root:org.
resource "depctrl_root_rbac" "this" {
  controller_users = ["depctrl-controller"]
  parent_paths     = ["root:org"]
}
