package v1alpha1

// Whether a rule names types its APIExports serve: the TypesServed
// condition the controller reports, and the check the Terraform provider
// makes at plan. This is pure: it knows what the exports serve, not how
// that was read (package process reads it).

import (
	"fmt"
	"sort"
	"strings"

	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
)

// Reasons of the TypesServed condition when a rule names a type its export
// does not serve.
const (
	ReasonExportNotFound    = "ExportNotFound"
	ReasonGroupNotServed    = "GroupNotServed"
	ReasonResourceNotServed = "ResourceNotServed"
	ReasonVersionNotServed  = "VersionNotServed"
	ReasonKindMismatch      = "KindMismatch"
)

// ExportTypes is what one APIExport serves, as its APIResourceSchemas
// describe it.
//
// +kubebuilder:object:generate=false
type ExportTypes struct {
	// Name is the export's name.
	Name      string
	Resources []ServedResource
}

// ServedResource is one resource of an export.
//
// +kubebuilder:object:generate=false
type ServedResource struct {
	Group, Resource, Singular, Kind string
	Versions                        []ServedVersion
}

// ServedVersion is one version of a resource's schema.
//
// +kubebuilder:object:generate=false
type ServedVersion struct {
	Name   string
	Served bool
	// Schema is the version's OpenAPI schema, nil when it has none.
	Schema *apiextensionsv1.JSONSchemaProps
	// Subresources are the version's: a path in what they write is
	// written by requests no reference index webhook sees
	// (inSubresource).
	Subresources apiextensionsv1.CustomResourceSubresources
}

// ServedResourceOf is what an APIResourceSchema says about its resource.
func ServedResourceOf(s *apisv1alpha1.APIResourceSchema) (ServedResource, error) {
	r := ServedResource{Group: s.Spec.Group, Resource: s.Spec.Names.Plural, Singular: s.Spec.Names.Singular, Kind: s.Spec.Names.Kind}
	for i := range s.Spec.Versions {
		v := &s.Spec.Versions[i]
		props, err := v.GetSchema()
		if err != nil {
			return ServedResource{}, fmt.Errorf("decoding the schema of version %s of APIResourceSchema %s: %w", v.Name, s.Name, err)
		}
		r.Versions = append(r.Versions, ServedVersion{Name: v.Name, Served: v.Served, Schema: props, Subresources: *v.Subresources.DeepCopy()})
	}
	return r, nil
}

// ServedProblem is one way a rule disagrees with what its exports serve.
//
// +kubebuilder:object:generate=false
type ServedProblem struct {
	Reason string
	// Field is the rule's field in error, such as spec.dependent.version.
	Field  string
	Detail string
}

func (p ServedProblem) String() string { return p.Field + ": " + p.Detail }

// CheckServed checks the rule's spec against what its exports serve: the
// dependent against dependent (the export spec.dependent.apiExportName
// names, in the rule's workspace), dependency i against dependencies[i],
// and each field path against the dependent's schema and what its
// subresources write. A nil export is not checked. A type the export does
// not serve in that group, resource, version or kind has no objects, so a
// rule naming it protects nothing; a path a subresource writes changes out
// of the index's sight (inSubresource).
func (s *DependencyRuleSpec) CheckServed(dependent *ExportTypes, dependencies []*ExportTypes) []ServedProblem {
	var problems []ServedProblem
	var schema *ServedVersion
	d := s.Dependent
	if dependent != nil {
		v, p := checkType(dependent, "spec.dependent", d.Group, d.Version, d.Resource, d.Kind)
		problems = append(problems, p...)
		schema = v
	}
	for i, dep := range s.Dependencies {
		field := fmt.Sprintf("spec.dependencies[%d]", i)
		if i < len(dependencies) && dependencies[i] != nil {
			_, p := checkType(dependencies[i], field, dep.Group, dep.Version, dep.Resource, "")
			problems = append(problems, p...)
		}
		if schema == nil {
			continue
		}
		path, err := fieldpath.Parse(dep.FieldRef.Path)
		if err != nil {
			continue // Validate reports it
		}
		if reason, detail := fieldInSchema(schema.Schema, path); reason != "" {
			problems = append(problems, ServedProblem{Reason: reason, Field: field + ".fieldRef.path", Detail: fmt.Sprintf(
				"%s does not fit the schema of %s %s served by export %s: %s", dep.FieldRef.Path, d.Resource, d.Version, dependent.Name, detail)})
		}
		if detail := inSubresource(dependent, d.Group, d.Resource, path); detail != "" {
			problems = append(problems, ServedProblem{Reason: ReasonFieldPathInSubresource, Field: field + ".fieldRef.path", Detail: detail})
		}
	}
	return problems
}

// checkType finds group/resource at version in export e, and when kind is
// set checks it too. It returns the version found, nil when the type is
// not served.
func checkType(e *ExportTypes, field, group, version, resource, kind string) (*ServedVersion, []ServedProblem) {
	var res *ServedResource
	var inGroup, elsewhere []string
	for i := range e.Resources {
		r := &e.Resources[i]
		switch {
		case r.Group == group && r.Resource == resource:
			res = r
		case r.Group == group:
			inGroup = append(inGroup, r.Resource)
		case r.Resource == resource:
			elsewhere = append(elsewhere, r.Group)
		}
	}
	if res == nil {
		return nil, []ServedProblem{notServed(e, field, group, resource, inGroup, elsewhere)}
	}
	var ver *ServedVersion
	var served []string
	for i := range res.Versions {
		v := &res.Versions[i]
		if !v.Served {
			continue
		}
		served = append(served, v.Name)
		if v.Name == version {
			ver = v
		}
	}
	var problems []ServedProblem
	if ver == nil {
		detail := fmt.Sprintf("export %s serves %s in %s, not %s", e.Name, resource, strings.Join(served, ", "), version)
		if len(served) == 0 {
			detail = fmt.Sprintf("export %s serves %s in no version at all", e.Name, resource)
		}
		problems = append(problems, ServedProblem{Reason: ReasonVersionNotServed, Field: field + ".version", Detail: detail})
	}
	if kind != "" && res.Kind != kind {
		problems = append(problems, ServedProblem{Reason: ReasonKindMismatch, Field: field + ".kind", Detail: fmt.Sprintf(
			"export %s serves %s as kind %s, not %s", e.Name, resource, res.Kind, kind)})
	}
	return ver, problems
}

// notServed says why e serves no group/resource, naming the field most
// likely wrong.
func notServed(e *ExportTypes, field, group, resource string, inGroup, elsewhere []string) ServedProblem {
	if len(elsewhere) > 0 {
		sort.Strings(elsewhere)
		return ServedProblem{Reason: ReasonGroupNotServed, Field: field + ".group", Detail: fmt.Sprintf(
			"export %s serves %s in group %s, not %s", e.Name, resource, strings.Join(elsewhere, ", "), group)}
	}
	if len(inGroup) == 0 {
		return ServedProblem{Reason: ReasonGroupNotServed, Field: field + ".group", Detail: fmt.Sprintf(
			"export %s serves nothing in group %s; it serves %s", e.Name, group, e.served())}
	}
	for _, r := range e.Resources {
		if r.Group == group && (r.Singular == resource || strings.ToLower(r.Kind) == resource) {
			return ServedProblem{Reason: ReasonResourceNotServed, Field: field + ".resource", Detail: fmt.Sprintf(
				"export %s serves no resource %s in %s: name the plural, %s", e.Name, resource, group, r.Resource)}
		}
	}
	sort.Strings(inGroup)
	return ServedProblem{Reason: ReasonResourceNotServed, Field: field + ".resource", Detail: fmt.Sprintf(
		"export %s serves no resource %s in %s; it serves %s", e.Name, resource, group, strings.Join(inGroup, ", "))}
}

// served lists e's resources as resource.group, sorted.
func (e *ExportTypes) served() string {
	if len(e.Resources) == 0 {
		return "no resources"
	}
	out := make([]string, 0, len(e.Resources))
	for _, r := range e.Resources {
		out = append(out, r.Resource+"."+r.Group)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
