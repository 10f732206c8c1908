# A workspace is imported by its path.
terraform import depctrl_workspace.network root:org:network
