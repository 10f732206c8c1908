# The shards, one depctrl_shard each. kcp does not know the credentials
# that reach a shard directly: add kubeconfig_path to each generated
# resource and its import identity before terraform apply.
list "depctrl_shard" "all" {
  provider         = depctrl
  include_resource = true
}
