data "depctrl_shards" "all" {}

# The webhook's read access on every shard of the installation. Each shard's
# admin kubeconfig is expected at secrets/<shard>.kubeconfig.
resource "depctrl_shard" "each" {
  for_each = { for s in data.depctrl_shards.all.shards : s.name => s }

  name            = each.key
  url             = each.value.base_url
  kubeconfig_path = "secrets/${each.key}.kubeconfig"
  webhook_users   = ["depctrl-webhook"]
}
