variable "kcp_kubeconfig" {
  description = "A kcp admin kubeconfig for the front-proxy."
  type        = string
}

variable "shards" {
  description = "Shard name to a kubeconfig with system:masters credentials for that shard, reached directly."
  type        = map(string)
}

variable "controller_user" {
  description = "The user the depctrl controller authenticates as."
  type        = string
  default     = "depctrl-controller"
}

variable "webhook_user" {
  description = "The user the depctrl webhook authenticates as."
  type        = string
  default     = "depctrl-webhook"
}

variable "install_rules" {
  description = "Whether to create the rules. The quickstart first applies without them, lets the API providers export their types, then applies with them: a rule waits until the runtime enforces it, and that needs the exported types."
  type        = bool
  default     = true
}

variable "kube_kubeconfig" {
  description = "A kubeconfig for the Kubernetes cluster the runtime is deployed into."
  type        = string
}

variable "controller_kubeconfig" {
  description = "The controller's kcp kubeconfig; its server is the dep-ctrl workspace (https://<front-proxy>/clusters/root:depctrl)."
  type        = string
}

variable "webhook_kubeconfig" {
  description = "The webhook's kcp kubeconfig; its server is the dep-ctrl workspace."
  type        = string
}

variable "webhook_url" {
  description = "How kcp reaches the webhook. null: the Service's cluster DNS name, right when kcp runs in the same cluster."
  type        = string
  default     = null
}
