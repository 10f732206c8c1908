# <namespace>/<name> (or <namespace> for the default name, depctrl), then
# what the cluster does not record as ,<attribute>=<value>.
import {
  to = depctrl_runtime.this
  id = "depctrl-system/depctrl,controller.kubeconfig_path=secrets/depctrl-controller.kubeconfig,webhook.kubeconfig_path=secrets/depctrl-webhook.kubeconfig"
}
