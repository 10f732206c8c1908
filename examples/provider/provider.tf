# Reach kcp through its front-proxy with a kubeconfig. The server may name
# a workspace (…/clusters/root): the provider addresses each workspace
# itself.
provider "depctrl" {
  kubeconfig_path = "~/.kube/kcp-admin.kubeconfig"
}

# Or with a host and credentials, for example from a secret store.
provider "depctrl" {
  alias                  = "token"
  host                   = "https://kcp.example.com:6443"
  token                  = var.kcp_token
  cluster_ca_certificate = file("kcp-ca.crt")
}

variable "kcp_token" {
  type      = string
  sensitive = true
}

# depctrl_runtime deploys into the cluster of the kubernetes block: in a real
# installation, the cluster that hosts kcp. Only that resource uses it.
provider "depctrl" {
  alias           = "with_runtime"
  kubeconfig_path = "~/.kube/kcp-admin.kubeconfig"

  kubernetes {
    kubeconfig_path = "~/.kube/config"
    context         = "kcp-hosting-cluster"
  }
}
