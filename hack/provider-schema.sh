#!/usr/bin/env bash
# Writes the provider's schema, as `terraform providers schema -json` prints
# it, to $1. tfplugindocs takes it through --providers-schema because its own
# build step expects the provider's main package at the repository root.
# $TERRAFORM is the CLI to ask (default: terraform on PATH); make docs passes
# the pinned Terraform that reports resource identity schemas (1.12 and
# later), so that the docs are the same on every machine.
set -euo pipefail
out=$1
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/bin/terraform-provider-depctrl" "$root/cmd/terraform-provider-depctrl"
cat > "$tmp/dev.tfrc" <<EOT
provider_installation {
  dev_overrides {
    "depctrl/depctrl" = "$tmp/bin"
  }
  direct {}
}
EOT
mkdir "$tmp/cfg"
cat > "$tmp/cfg/main.tf" <<'EOT'
terraform {
  required_providers {
    depctrl = { source = "depctrl/depctrl" }
  }
}
EOT
# tfplugindocs looks the schema up under the hashicorp namespace.
(cd "$tmp/cfg" && TF_CLI_CONFIG_FILE="$tmp/dev.tfrc" CHECKPOINT_DISABLE=1 "${TERRAFORM:-terraform}" providers schema -json) \
  | sed 's#/depctrl/depctrl"#/hashicorp/depctrl"#' > "$out"
# Blocks the provider requires by a validator are documented as required.
(cd "$root" && go run ./hack/docs-schema "$out")
