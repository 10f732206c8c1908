# The export is imported by the dep-ctrl workspace path and the export name.
terraform import depctrl_export.this root:depctrl/dependencies.opendefense.cloud
