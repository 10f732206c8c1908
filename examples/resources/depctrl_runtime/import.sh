# <namespace>/<name>, or <namespace> for the default name "depctrl". The
# kubeconfigs are read from their Secrets; a generated certificate is read
# back too, but its CA key is not in the cluster, so its next renewal also
# starts a new CA (kcp trusts both while the pods roll).
terraform import depctrl_runtime.this depctrl-system/depctrl

# What the cluster does not record follows as ,<attribute>=<value>: where
# the configuration takes the kubeconfigs from (workspace_path,
# controller.kubeconfig_path, controller.context, webhook.kubeconfig_path,
# webhook.context) and the certificate policy (webhook.certificate_validity,
# webhook.certificate_renew_before). Give those the configuration sets, and
# the plan after import is empty.
terraform import depctrl_runtime.this depctrl-system/depctrl,controller.kubeconfig_path=secrets/depctrl-controller.kubeconfig,webhook.kubeconfig_path=secrets/depctrl-webhook.kubeconfig
