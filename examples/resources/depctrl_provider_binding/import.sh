# A binding is imported by the provider workspace path and the binding name.
terraform import depctrl_provider_binding.network root:org:network/dep-ctrl
