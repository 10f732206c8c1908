output "dep_ctrl_workspace" {
  description = "The workspace the runtime's kubeconfigs point at."
  value       = depctrl_workspace.dep_ctrl.path
}

output "webhook_url" {
  description = "Where kcp calls the webhook."
  value       = depctrl_runtime.this.webhook_url
}

output "webhook_certificate_expires" {
  description = "When the webhook's serving certificate expires; a plan within 30 days of it renews it."
  value       = depctrl_runtime.this.certificate_not_after
}

output "rules_ready" {
  description = "Whether the webhook enforces each rule."
  value = {
    vm_needs_vpc      = depctrl_dependency_rule.vm_needs_vpc.ready
    db_needs_firewall = depctrl_dependency_rule.db_needs_firewall.ready
  }
}
