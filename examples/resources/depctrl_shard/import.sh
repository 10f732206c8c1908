# Import needs to know how to reach the shard:
#   <shard name>[/<grant name>],<kubeconfig path>[,context=<context>][,url=<url>]
#   <shard name>[/<grant name>],<client certificate path>,<client key path>[,ca=<CA file>][,url=<url>]
#   <shard name>[/<grant name>][,url=<url>]  (credentials in the provider block's shard_credentials)
# Without url, the kubeconfig's server is used, else the base URL kcp
# records for the shard. The webhook's users and groups, read_resources,
# protected_resources and reindex are read back from the grant on the shard.
terraform import depctrl_shard.root root,secrets/shard-root-admin.kubeconfig
terraform import depctrl_shard.shard_1 shard-1,secrets/shard-1-admin.crt,secrets/shard-1-admin.key,ca=secrets/kcp-ca.crt,url=https://shard-1.kcp.example.com:6443
terraform import depctrl_shard.shard_2 shard-2,url=https://shard-2.kcp.example.com:6443
