# A workspace is imported by its path.
import {
  to       = depctrl_workspace.network
  identity = { path = "root:org:network" }
}
