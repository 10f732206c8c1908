package v1alpha1

import (
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
)

var (
	groupRE    = regexp.MustCompile(GroupPattern)
	versionRE  = regexp.MustCompile(VersionPattern)
	resourceRE = regexp.MustCompile(ResourcePattern)
	kindRE     = regexp.MustCompile(KindPattern)
	pathRE     = regexp.MustCompile(WorkspacePathPattern)
)

// Validate checks a rule the way the schema does, so that the provider can
// refuse a bad rule at plan time and the runtime never acts on one that
// slipped past an older schema. Errors carry the field path.
func (r *DependencyRule) Validate() field.ErrorList {
	return r.Spec.Validate(field.NewPath("spec"))
}

// Validate checks a spec; fld is its path.
func (s *DependencyRuleSpec) Validate(fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	d := s.Dependent
	dp := fld.Child("dependent")
	errs = append(errs, matches(dp.Child("apiExportName"), d.APIExportName, groupRE, 253, "a lowercase DNS name such as compute.example.io")...)
	errs = append(errs, matches(dp.Child("group"), d.Group, groupRE, 253, "a lowercase API group such as compute.example.io")...)
	errs = append(errs, matches(dp.Child("version"), d.Version, versionRE, 63, "a version such as v1 or v1beta1")...)
	errs = append(errs, matches(dp.Child("kind"), d.Kind, kindRE, 63, "a CamelCase kind such as VirtualMachine")...)
	errs = append(errs, matches(dp.Child("resource"), d.Resource, resourceRE, 63, "a lowercase plural resource such as virtualmachines")...)

	deps := fld.Child("dependencies")
	if len(s.Dependencies) == 0 {
		errs = append(errs, field.Required(deps, "at least one dependency is required"))
	}
	if len(s.Dependencies) > 32 {
		errs = append(errs, field.TooMany(deps, len(s.Dependencies), 32))
	}
	for i, dep := range s.Dependencies {
		p := deps.Index(i)
		errs = append(errs, matches(p.Child("apiExportRef", "path"), dep.APIExportRef.Path, pathRE, 1024, "a workspace path such as root:org:network, with segments of at most 63 characters")...)
		errs = append(errs, matches(p.Child("apiExportRef", "name"), dep.APIExportRef.Name, groupRE, 253, "a lowercase APIExport name such as network.example.io")...)
		errs = append(errs, matches(p.Child("group"), dep.Group, groupRE, 253, "a lowercase API group such as network.example.io")...)
		errs = append(errs, matches(p.Child("version"), dep.Version, versionRE, 63, "a version such as v1 or v1beta1")...)
		errs = append(errs, matches(p.Child("resource"), dep.Resource, resourceRE, 63, "a lowercase plural resource such as vpcs")...)
		if _, err := fieldpath.Parse(dep.FieldRef.Path); err != nil {
			errs = append(errs, field.Invalid(p.Child("fieldRef", "path"), dep.FieldRef.Path, err.Error()))
		}
	}
	return errs
}

func matches(p *field.Path, v string, re *regexp.Regexp, maxLen int, want string) field.ErrorList {
	switch {
	case v == "":
		return field.ErrorList{field.Required(p, "must be "+want)}
	case len(v) > maxLen:
		return field.ErrorList{field.TooLong(p, v, maxLen)}
	case !re.MatchString(v):
		return field.ErrorList{field.Invalid(p, v, "must be "+want)}
	}
	return nil
}
