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
  description = "Whether to create the rules. The quickstart first applies without them, starts the runtime, then applies with them, because rules wait until the runtime enforces them."
  type        = bool
  default     = true
}
