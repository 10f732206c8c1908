# root and the parent paths, joined by ",", then /<name> when the name is
# not the default.
import {
  to = depctrl_root_rbac.this
  id = "root,root:org"
}
