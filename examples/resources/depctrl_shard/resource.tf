# One resource per shard: adding a shard to the installation is adding one
# of these. Each talks to its shard directly with that shard's credentials.
resource "depctrl_shard" "root" {
  name            = "root"
  kubeconfig_path = "secrets/shard-root-admin.kubeconfig"
  webhook_users   = ["depctrl-webhook"]
}

resource "depctrl_shard" "shard_1" {
  name                    = "shard-1"
  url                     = "https://shard-1.kcp.example.com:6443"
  client_certificate_path = "secrets/shard-1-admin.crt"
  client_key_path         = "secrets/shard-1-admin.key"
  ca_certificate          = file("secrets/kcp-ca.crt")
  webhook_users           = ["depctrl-webhook"]

  # Only the dependent types rules name, instead of everything (secrets
  # included).
  read_resources = ["virtualmachines.compute.example.io", "manageddatabases.compute.example.io"]

  # The types they protect, required with read_resources (the webhook
  # patches their objects to record each new reference and to settle them)
  # and with deferred_deletion (the only types it may delete).
  protected_resources = ["vpcs.network.example.io", "subnets.network.example.io"]

  # Let the webhook re-index dependents written before their rule (with an
  # empty patch each) instead of reading them in full at every deletion.
  reindex = true

  # Let the webhook carry out the deletions it defers (off by default):
  # delete on the protected types alone, create on SubjectAccessReviews, get on
  # Namespaces. It pairs with webhook.deferred_deletion on depctrl_runtime;
  # grant it on every shard once the runtime defers deletions.
  deferred_deletion = true
}

# No credentials here: the provider block's shard_credentials["shard-2"]
# holds them, so no key is stored in state (see the provider's example).
resource "depctrl_shard" "shard_2" {
  name          = "shard-2"
  url           = "https://shard-2.kcp.example.com:6443"
  webhook_users = ["depctrl-webhook"]
}
