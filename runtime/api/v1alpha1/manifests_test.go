package v1alpha1

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

func TestManifestsDecodeAndAgree(t *testing.T) {
	crd, schema, export := CRD(), APIResourceSchema(), APIExport("")
	if crd.Spec.Group != Group || crd.Spec.Names.Plural != Resource {
		t.Fatalf("CRD is for %s/%s", crd.Spec.Group, crd.Spec.Names.Plural)
	}
	if export.Name != DefaultAPIExportName || export.Spec.Resources[0].Schema != schema.Name {
		t.Fatalf("export %s serves schema %s, want %s", export.Name, export.Spec.Resources[0].Schema, schema.Name)
	}
	var claims []string
	for _, c := range export.Spec.PermissionClaims {
		claims = append(claims, fmt.Sprintf("%s/%s %v", c.Group, c.Resource, c.Verbs))
	}
	want := []string{
		"admissionregistration.k8s.io/validatingwebhookconfigurations " + fmt.Sprint(ClaimVerbs),
		"admissionregistration.k8s.io/mutatingwebhookconfigurations " + fmt.Sprint(ClaimVerbs),
		"/events " + fmt.Sprint(EventClaimVerbs),
		"apis.kcp.io/apiexports " + fmt.Sprint(TypeClaimVerbs),
		"apis.kcp.io/apiresourceschemas " + fmt.Sprint(TypeClaimVerbs),
	}
	if !slices.Equal(claims, want) {
		t.Fatalf("claims %q, want %q", claims, want)
	}
	if APIExport("custom").Name != "custom" {
		t.Fatal("APIExport must take the given name")
	}
}

// TestSchemaPatternsMatchValidate: the patterns controller-gen took from
// the markers in types.go are the ones Validate (and so the provider at
// plan) applies.
func TestSchemaPatternsMatchValidate(t *testing.T) {
	spec := CRD().Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	dependent := spec.Properties["dependent"]
	dependency := spec.Properties["dependencies"].Items.Schema
	for name, tt := range map[string]struct{ got, want string }{
		"dependent.group":                  {dependent.Properties["group"].Pattern, GroupPattern},
		"dependent.version":                {dependent.Properties["version"].Pattern, VersionPattern},
		"dependent.kind":                   {dependent.Properties["kind"].Pattern, KindPattern},
		"dependent.resource":               {dependent.Properties["resource"].Pattern, ResourcePattern},
		"dependent.apiExportName":          {dependent.Properties["apiExportName"].Pattern, ExportNamePattern},
		"dependencies[].group":             {dependency.Properties["group"].Pattern, GroupPattern},
		"dependencies[].apiExportRef.path": {dependency.Properties["apiExportRef"].Properties["path"].Pattern, WorkspacePathPattern},
		"dependencies[].apiExportRef.name": {dependency.Properties["apiExportRef"].Properties["name"].Pattern, ExportNamePattern},
		"dependencies[].fieldRef.path":     {dependency.Properties["fieldRef"].Properties["path"].Pattern, FieldPathPattern},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: the schema says %q, Validate %q", name, tt.got, tt.want)
		}
	}
}

// TestGeneratedFilesAreCurrent regenerates the CRD from the Go types into a
// temporary directory and compares every generated file with the checked-in
// one.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs controller-gen")
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "tool", "controller-gen", "crd", "paths=./...", "output:crd:dir="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen: %v\n%s", err, out)
	}
	crd, err := os.ReadFile(filepath.Join(dir, "dependencies.opendefense.cloud_dependencyrules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := FromCRD(crd)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{
		"dependencies.opendefense.cloud_dependencyrules.yaml": crd,
		"apiresourceschema.yaml":                              files.APIResourceSchema,
		"apiexport.yaml":                                      files.APIExport,
	} {
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run make generate and commit the result", name)
		}
	}
}
