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

# <shard name>[/<grant name>][,url=<url>], with the credentials in the
# provider block's shard_credentials
import {
  to = depctrl_shard.shard_2
  id = "shard-2,url=https://shard-2.kcp.example.com:6443"
}
