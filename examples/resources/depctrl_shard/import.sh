# Import needs to know how to reach the shard:
#   <shard name>[/<grant name>],<kubeconfig path>[,context=<context>]
#   <shard name>[/<grant name>],<client certificate path>,<client key path>
terraform import depctrl_shard.root root,secrets/shard-root-admin.kubeconfig
terraform import depctrl_shard.shard_1 shard-1,secrets/shard-1-admin.crt,secrets/shard-1-admin.key
terraform import depctrl_shard.shard_2 shard-2,secrets/shard-2-admin.kubeconfig,context=system-masters
