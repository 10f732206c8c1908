package v1alpha1

import (
	"strings"
	"testing"
)

func validRule() *DependencyRule {
	return &DependencyRule{Spec: DependencyRuleSpec{
		Dependent: Dependent{APIExportName: "compute.test.io", Group: "compute.test.io", Version: "v1", Kind: "VirtualMachine", Resource: "virtualmachines"},
		Dependencies: []Dependency{{
			APIExportRef: APIExportRef{Path: "root:org:network", Name: "network.test.io"},
			Group:        "network.test.io", Version: "v1", Resource: "vpcs",
			FieldRef: FieldRef{Path: ".spec.vpcRef.name"},
		}},
	}}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*DependencyRule)
		wantErr string
	}{
		{name: "valid", mutate: func(*DependencyRule) {}},
		{name: "list path", mutate: func(r *DependencyRule) { r.Spec.Dependencies[0].FieldRef.Path = ".spec.vpcs[*].name" }},
		{name: "beta version", mutate: func(r *DependencyRule) { r.Spec.Dependent.Version = "v2beta1" }},
		{name: "no dependencies", mutate: func(r *DependencyRule) { r.Spec.Dependencies = nil }, wantErr: "spec.dependencies: Required value"},
		{name: "bad group", mutate: func(r *DependencyRule) { r.Spec.Dependent.Group = "Compute.IO" }, wantErr: "spec.dependent.group: Invalid value"},
		{name: "empty kind", mutate: func(r *DependencyRule) { r.Spec.Dependent.Kind = "" }, wantErr: "spec.dependent.kind: Required value"},
		{name: "lowercase kind", mutate: func(r *DependencyRule) { r.Spec.Dependent.Kind = "virtualMachine" }, wantErr: "spec.dependent.kind: Invalid value"},
		{name: "bad version", mutate: func(r *DependencyRule) { r.Spec.Dependencies[0].Version = "1" }, wantErr: "spec.dependencies[0].version: Invalid value"},
		{name: "plural with dot", mutate: func(r *DependencyRule) { r.Spec.Dependencies[0].Resource = "vpcs.network" }, wantErr: "spec.dependencies[0].resource: Invalid value"},
		{name: "path with slash", mutate: func(r *DependencyRule) { r.Spec.Dependencies[0].APIExportRef.Path = "root/network" }, wantErr: "spec.dependencies[0].apiExportRef.path: Invalid value"},
		{name: "path trailing colon", mutate: func(r *DependencyRule) { r.Spec.Dependencies[0].APIExportRef.Path = "root:" }, wantErr: "apiExportRef.path: Invalid value"},
		{name: "bad field path", mutate: func(r *DependencyRule) { r.Spec.Dependencies[0].FieldRef.Path = "spec.vpcRef" }, wantErr: "spec.dependencies[0].fieldRef.path: Invalid value: \"spec.vpcRef\": field path \"spec.vpcRef\" must start with a dot"},
		{name: "long group", mutate: func(r *DependencyRule) { r.Spec.Dependent.Group = strings.Repeat("a", 254) }, wantErr: "spec.dependent.group: Too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := validRule()
			tt.mutate(r)
			errs := r.Validate()
			if tt.wantErr == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if !strings.Contains(errs.ToAggregate().Error(), tt.wantErr) {
				t.Fatalf("errors %v, want %q", errs, tt.wantErr)
			}
		})
	}
}
