// Command depctrl-webhook decides DELETE admission requests for protected
// objects: it keeps a registry of DependencyRules and refuses a deletion
// while a dependent in the consumer workspace still references the object.
package main

import (
	"context"

	"github.com/go-logr/logr"

	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
	"github.com/depctrl/terraform-provider-depctrl/runtime/webhook"
)

var version = "dev"

func main() {
	o := webhook.Options{}
	process.Main("depctrl-webhook", version, o.BindFlags, func(ctx context.Context, log logr.Logger) error {
		return webhook.Run(ctx, o, log)
	})
}
