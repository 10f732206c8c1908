// Command terraform-provider-depctrl is the depctrl Terraform provider.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/depctrl/terraform-provider-depctrl/provider"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

type options struct {
	debug, showVersion bool
}

// parseFlags reads the plugin's command line with a flag set of its own:
// a dependency (controller-runtime's config package) registers --kubeconfig
// on the global one, which the plugin does not read, so --help lists only
// what the plugin accepts.
func parseFlags(name string, args []string, output io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(output)
	fs.BoolVar(&o.debug, "debug", false, "run the provider with support for debuggers like delve")
	fs.BoolVar(&o.showVersion, "version", false, "print the version and exit")
	return o, fs.Parse(args)
}

func main() {
	o, err := parseFlags(os.Args[0], os.Args[1:], os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return
	case err != nil:
		os.Exit(2)
	}
	if o.showVersion {
		fmt.Println(version)
		return
	}

	err = providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: "registry.terraform.io/depctrl/depctrl",
		Debug:   o.debug,
	})
	if err != nil {
		log.Fatal(err)
	}
}
