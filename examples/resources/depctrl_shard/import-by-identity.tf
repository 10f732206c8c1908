# The identity names the grant by its shard (and grant_name, when that is
# not the default). An import block also says where the credentials for the
# shard are, as the import ID does, since nothing in kcp records them. These
# attributes are for import only, and null in the stored identity.
import {
  to = depctrl_shard.root
  identity = {
    name            = "root"
    kubeconfig_path = "secrets/shard-root-admin.kubeconfig"
  }
}

# With a client certificate; the CA is read from the file and becomes
# ca_certificate.
import {
  to = depctrl_shard.shard_1
  identity = {
    name                    = "shard-1"
    client_certificate_path = "secrets/shard-1-admin.crt"
    client_key_path         = "secrets/shard-1-admin.key"
    ca_certificate_path     = "secrets/kcp-ca.crt"
    url                     = "https://shard-1.kcp.example.com:6443"
  }
}

# With the credentials in the provider block's shard_credentials, the
# identity needs no more than the shard.
import {
  to = depctrl_shard.shard_2
  identity = {
    name = "shard-2"
    url  = "https://shard-2.kcp.example.com:6443"
  }
}
