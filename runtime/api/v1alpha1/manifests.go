package v1alpha1

// The DependencyRule CRD, the kcp APIResourceSchema and the APIExport,
// generated from this package's types (make generate) and embedded: the
// runtime, the Terraform provider and the tests all install these, so the
// schema is defined once.

//go:generate sh -c "cd ../../.. && go run ./hack/gen-manifests"

import (
	_ "embed"
	"fmt"

	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

var (
	//go:embed dependencies.opendefense.cloud_dependencyrules.yaml
	crdYAML []byte
	//go:embed apiresourceschema.yaml
	schemaYAML []byte
	//go:embed apiexport.yaml
	exportYAML []byte
)

// CRDYAML, APIResourceSchemaYAML and APIExportYAML return the raw files.
func CRDYAML() []byte               { return append([]byte(nil), crdYAML...) }
func APIResourceSchemaYAML() []byte { return append([]byte(nil), schemaYAML...) }
func APIExportYAML() []byte         { return append([]byte(nil), exportYAML...) }

// CRD returns the DependencyRule CustomResourceDefinition.
func CRD() *apiextensionsv1.CustomResourceDefinition {
	out := &apiextensionsv1.CustomResourceDefinition{}
	mustDecode(crdYAML, out)
	return out
}

// APIResourceSchema returns the kcp APIResourceSchema for DependencyRules.
func APIResourceSchema() *apisv1alpha1.APIResourceSchema {
	out := &apisv1alpha1.APIResourceSchema{}
	mustDecode(schemaYAML, out)
	return out
}

// SchemaName is the name of the bundled APIResourceSchema; it changes
// whenever the schema does.
func SchemaName() string { return APIResourceSchema().Name }

// APIExport returns the dep-ctrl APIExport, named name (the default is
// v1alpha1.DefaultAPIExportName), serving the bundled schema and claiming
// validatingwebhookconfigurations (to install the deletion webhook),
// mutatingwebhookconfigurations (to install the reference index webhook),
// Events (to report on rules where they live), and, read-only, APIExports
// and APIResourceSchemas (to check that the types a rule names are served).
func APIExport(name string) *apisv1alpha2.APIExport {
	out := &apisv1alpha2.APIExport{}
	mustDecode(exportYAML, out)
	if name != "" {
		out.Name = name
	}
	return out
}

func mustDecode(data []byte, into interface{}) {
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		panic(fmt.Sprintf("embedded manifest does not decode (run make generate): %v", err))
	}
}
