# Imported by root and the parent paths, joined by ",".
terraform import depctrl_root_rbac.this root,root:org
