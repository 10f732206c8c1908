# The runtime as YAML, for a GitOps repository. The certificate comes from
# elsewhere (here a file; the tls provider or a PKI work as well).
data "depctrl_runtime_manifests" "gitops" {
  namespace = "depctrl-system"

  controller = {
    kubeconfig_path = "secrets/depctrl-controller.kubeconfig"
  }

  webhook = {
    kubeconfig_path = "secrets/depctrl-webhook.kubeconfig"
    ca_certificate  = file("secrets/webhook-ca.crt")
    tls_certificate = file("secrets/webhook.crt")
    tls_private_key = file("secrets/webhook.key")
  }
}

# Write it to the repository with `terraform output -raw runtime_yaml`.
output "runtime_yaml" {
  value     = data.depctrl_runtime_manifests.gitops.yaml
  sensitive = true
}
