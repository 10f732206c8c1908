# The export is imported by the dep-ctrl workspace path and the export name.
import {
  to = depctrl_export.this
  identity = {
    workspace_path = "root:depctrl"
    name           = "dependencies.opendefense.cloud"
  }
}
