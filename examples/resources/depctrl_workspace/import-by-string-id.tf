# A workspace is imported by its path.
import {
  to = depctrl_workspace.network
  id = "root:org:network"
}
