# The runtime in the cluster that hosts kcp: kcp reaches the webhook through
# its Service, and the provider generates the webhook's certificate.
resource "depctrl_runtime" "this" {
  controller = {
    # Issued for the controller's own identity; the server is the dep-ctrl
    # workspace: https://<front-proxy>/clusters/root:depctrl
    kubeconfig_path = "secrets/depctrl-controller.kubeconfig"
  }

  webhook = {
    kubeconfig_path = "secrets/depctrl-webhook.kubeconfig"
    memory_limit    = "512Mi"
  }

  # Only kcp's shards (in the namespace "kcp") may call the webhook, and
  # only Prometheus may scrape metrics.
  network_policy = {
    webhook_namespaces = ["kcp"]
    webhook_cidrs      = []
    metrics_namespaces = ["monitoring"]
  }
}

# kcp elsewhere: it calls the webhook through a load balancer, and
# cert-manager keeps the serving certificate in a Secret of its own.
resource "depctrl_runtime" "external" {
  namespace        = "depctrl"
  create_namespace = false
  image            = "registry.example.com/platform/depctrl-runtime"

  controller = {
    kubeconfig_path = "secrets/depctrl-controller.kubeconfig"
    replicas        = 2
    extra_args      = ["--zap-log-level=debug"]
  }

  webhook = {
    kubeconfig_path = "secrets/depctrl-webhook.kubeconfig"
    replicas        = 3
    url             = "https://depctrl-webhook.example.com/validate"
    tls_secret_name = "depctrl-webhook-cert"

    # A deletion refused for its dependents, of an object that (or whose
    # namespace) carries dependencies.opendefense.cloud/defer-deletion:
    # "true", is carried out by the webhook once nothing references the
    # object. Every depctrl_shard needs deferred_deletion = true for it.
    deferred_deletion = true
  }

  # kcp's calls arrive through the ingress controller's pods.
  network_policy = {
    webhook_namespaces = ["ingress-nginx"]
    webhook_cidrs      = []
  }

  timeouts {
    create = "15m"
  }
}

# Kubeconfigs that never reach the state file: write-only attributes
# (Terraform 1.11 and later, OpenTofu 1.11 and later), here from ephemeral
# variables (a secrets manager's ephemeral resource works the same way).
# Terraform reads them at every plan and apply; a new version number
# rolls a new kubeconfig out explicitly.
variable "controller_kubeconfig" {
  type      = string
  sensitive = true
  ephemeral = true
}

variable "webhook_kubeconfig" {
  type      = string
  sensitive = true
  ephemeral = true
}

resource "depctrl_runtime" "write_only" {
  namespace = "depctrl-system"

  controller = {
    kubeconfig_wo         = var.controller_kubeconfig
    kubeconfig_wo_version = 1
  }

  webhook = {
    kubeconfig_wo         = var.webhook_kubeconfig
    kubeconfig_wo_version = 1
  }
}
