# A binding is imported by the provider workspace path and the binding name.
import {
  to = depctrl_provider_binding.network
  identity = {
    workspace_path = "root:org:network"
    name           = "dep-ctrl"
  }
}
