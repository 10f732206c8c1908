output "dep_ctrl_workspace" {
  description = "Where the runtime connects: its kubeconfigs point here."
  value       = depctrl_workspace.dep_ctrl.path
}

output "consumers" {
  description = "The consumer workspaces, one per shard."
  value       = { for k, ws in depctrl_workspace.consumer : k => ws.path }
}

output "rules_ready" {
  description = "Whether the webhook enforces each rule."
  value       = concat(depctrl_dependency_rule.vm_needs_vpc[*].ready, depctrl_dependency_rule.db_needs_firewall[*].ready)
}

output "webhook_url" {
  description = "Where kcp calls the webhook."
  value       = depctrl_runtime.this.webhook_url
}
