// Command gen-manifests regenerates the DependencyRule deepcopy code, CRD,
// APIResourceSchema and APIExport. Run it from the repository root with
// `make generate`.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

const (
	apiDir       = "runtime/api/v1alpha1"
	manifestsDir = "runtime/api/v1alpha1"
	crdFile      = "dependencies.opendefense.cloud_dependencyrules.yaml"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "gen-manifests: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	cg := exec.Command("go", "tool", "controller-gen",
		"object", "crd",
		"paths=./"+apiDir+"/...",
		"output:crd:dir="+manifestsDir)
	cg.Stdout, cg.Stderr = os.Stdout, os.Stderr
	if err := cg.Run(); err != nil {
		return fmt.Errorf("controller-gen: %w", err)
	}
	crd, err := os.ReadFile(filepath.Join(manifestsDir, crdFile))
	if err != nil {
		return err
	}
	files, err := v1alpha1.FromCRD(crd)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(manifestsDir, "apiresourceschema.yaml"), files.APIResourceSchema, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(manifestsDir, "apiexport.yaml"), files.APIExport, 0o644)
}
