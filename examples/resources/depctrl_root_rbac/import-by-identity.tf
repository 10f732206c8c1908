# The grant is imported by the workspaces besides root that hold it, and
# its name when that is not the default (depctrl:controller:workspace-reader).
# Unlike other identities, this one changes when parent_paths does.
import {
  to       = depctrl_root_rbac.this
  identity = { parent_paths = ["root:org"] }
}
