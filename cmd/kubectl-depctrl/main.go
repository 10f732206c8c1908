// Command kubectl-depctrl is the kubectl plugin of deletion protection:
// installed on the PATH, it runs as "kubectl depctrl".
package main

import (
	"os"

	"github.com/depctrl/terraform-provider-depctrl/internal/kubectlplugin"
)

// version is set by make release (-X main.version=...).
var version = "dev"

func main() {
	kubectlplugin.Version = version
	os.Exit(kubectlplugin.Main(os.Args[1:], os.Stdout, os.Stderr))
}
