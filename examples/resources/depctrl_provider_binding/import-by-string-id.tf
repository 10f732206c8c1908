# <workspace path>/<binding name>
import {
  to = depctrl_provider_binding.network
  id = "root:org:network/dep-ctrl"
}
