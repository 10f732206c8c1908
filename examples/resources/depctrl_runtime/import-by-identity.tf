# The identity names the runtime by its namespace (and name, when that is
# not the default, depctrl). An import block also gives what the
# configuration sets and the cluster does not record, so that the plan
# after import is empty: workspace_path, where the kubeconfigs come from
# (controller_kubeconfig_path, controller_context, webhook_kubeconfig_path,
# webhook_context) and the certificate policy
# (webhook_certificate_validity, webhook_certificate_renew_before). These
# attributes are for import only, and null in the stored identity. Without
# them the kubeconfigs are read from their Secrets.
import {
  to = depctrl_runtime.this
  identity = {
    namespace                  = "depctrl-system"
    controller_kubeconfig_path = "secrets/depctrl-controller.kubeconfig"
    webhook_kubeconfig_path    = "secrets/depctrl-webhook.kubeconfig"
  }
}
