# <namespace>/<name>, or <namespace> for the default name "depctrl". The
# kubeconfigs are read from their Secrets; a generated certificate is read
# back too, but its CA key is not in the cluster, so its next renewal also
# starts a new CA (kcp trusts both while the pods roll).
terraform import depctrl_runtime.this depctrl-system/depctrl
