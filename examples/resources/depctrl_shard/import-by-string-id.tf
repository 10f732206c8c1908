# <shard name>[/<grant name>],<kubeconfig path>[,context=<context>][,url=<url>]
import {
  to = depctrl_shard.root
  id = "root,secrets/shard-root-admin.kubeconfig"
}

# <shard name>[/<grant name>],<client certificate path>,<client key path>[,ca=<CA file>][,url=<url>]
import {
  to = depctrl_shard.shard_1
  id = "shard-1,secrets/shard-1-admin.crt,secrets/shard-1-admin.key,ca=secrets/kcp-ca.crt,url=https://shard-1.kcp.example.com:6443"
}
