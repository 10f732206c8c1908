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

# Keys for shards, for depctrl_shard resources that set no credentials of
# their own. The provider block is never stored in state; an ephemeral
# variable (or a secrets manager's ephemeral resource) keeps the key out of
# the plan too.
provider "depctrl" {
  alias           = "shard_keys"
  kubeconfig_path = "~/.kube/kcp-admin.kubeconfig"

  shard_credentials = {
    "shard-2" = {
      client_certificate     = file("secrets/shard-2-admin.crt")
      client_key             = var.shard_2_key
      cluster_ca_certificate = file("secrets/kcp-ca.crt")
    }
  }
}

variable "shard_2_key" {
  type      = string
  sensitive = true
  ephemeral = true
}
