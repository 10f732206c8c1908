// Command terraform-provider-depctrl is the depctrl Terraform provider.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/depctrl/terraform-provider-depctrl/provider"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	// An own flag set: a dependency registers --kubeconfig on the global
	// one, which the plugin does not read.
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	var debug, showVersion bool
	fs.BoolVar(&debug, "debug", false, "run the provider with support for debuggers like delve")
	fs.BoolVar(&showVersion, "version", false, "print the version and exit")
	_ = fs.Parse(os.Args[1:])
	if showVersion {
		fmt.Println(version)
		return
	}

	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: "registry.terraform.io/depctrl/depctrl",
		Debug:   debug,
	})
	if err != nil {
		log.Fatal(err)
	}
}
