# <workspace path>/<export name>
import {
  to = depctrl_export.this
  id = "root:depctrl/dependencies.opendefense.cloud"
}
