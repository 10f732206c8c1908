// Command depctrl-controller watches DependencyRules through the dep-ctrl
// APIExport's virtual workspace and installs the deletion-protection webhook
// configuration in every provider workspace that a rule protects, and the
// reference index webhook configuration next to the rules.
package main

import (
	"context"

	"github.com/go-logr/logr"

	"github.com/depctrl/terraform-provider-depctrl/runtime/controller"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

var version = "dev"

func main() {
	o := controller.Options{}
	process.Main("depctrl-controller", version, o.BindFlags, func(ctx context.Context, log logr.Logger) error {
		return controller.Run(ctx, o, log)
	})
}
