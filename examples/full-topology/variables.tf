variable "kcp_kubeconfig" {
  description = "A kubeconfig with kcp admin rights, through the front-proxy."
  type        = string
}

variable "kube_kubeconfig" {
  description = "A kubeconfig for the cluster the runtime runs in (the one hosting kcp)."
  type        = string
}

variable "shards" {
  description = "Every kcp shard: its name (the Shard object in root) to a kubeconfig that reaches the shard directly with system:masters rights. Adding a shard is adding an entry."
  type        = map(string)
}

variable "controller_kubeconfig" {
  description = "The controller's kcp kubeconfig, issued for controller_user through the front-proxy (the kcp-operator's Kubeconfig with a frontProxyRef, for example). Its server is pointed at the dep-ctrl workspace."
  type        = string
}

variable "webhook_kubeconfig" {
  description = "The webhook's kcp kubeconfig, issued for webhook_user through the front-proxy. Its server is pointed at the dep-ctrl workspace."
  type        = string
}

variable "controller_user" {
  description = "The user the controller's kubeconfig authenticates as."
  type        = string
  default     = "depctrl-controller"
}

variable "webhook_user" {
  description = "The user the webhook's kubeconfig authenticates as."
  type        = string
  default     = "depctrl-webhook"
}

variable "webhook_url" {
  description = "How kcp reaches the webhook, when kcp does not run in the runtime's cluster. null: the Service's cluster DNS name."
  type        = string
  default     = null
}

variable "kcp_namespace" {
  description = "The namespace kcp's shards run in, when they run in the runtime's cluster: the webhook's NetworkPolicy then admits only their pods. null: the provider's default policy (every namespace and the private address ranges)."
  type        = string
  default     = null
}

variable "runtime_image" {
  description = "The runtime image repository (`make image` builds it). null: the provider's default."
  type        = string
  default     = null
}

variable "dependent_types" {
  description = "The dependent types the webhook may read on every shard (resource.group). null: everything, secrets included."
  type        = list(string)
  default     = ["virtualmachines.compute.test.io", "manageddbs.compute.test.io"]
}

variable "protected_types" {
  description = "The protected types (resource.group) whose objects the webhook may get, list and patch, to record new references and settle them; every type the rules protect. Required with dependent_types, and with deferred_deletion, the only types the webhook may then delete; unused otherwise."
  type        = list(string)
  default     = ["vpcs.network.test.io", "firewallrules.network.test.io"]
}

variable "deferred_deletion" {
  description = "Whether the webhook defers the deletions it refuses for their dependents, of objects that (or whose namespace) carry dependencies.opendefense.cloud/defer-deletion: \"true\" or that a rule with defer_deletion protects, and deletes them once nothing references them; every shard then grants it delete on the protected types, create on SubjectAccessReviews and get on Namespaces. false: refused deletions are only refused."
  type        = bool
  default     = false
}
