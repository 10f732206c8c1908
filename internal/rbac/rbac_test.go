package rbac

import (
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

func TestShardReader(t *testing.T) {
	webhook := []rbacv1.Subject{User("depctrl-webhook")}
	tests := []struct {
		name      string
		resources []ReadResource
		protected []ReadResource
		reindex   bool
		deferred  bool
		want      []rbacv1.PolicyRule
	}{
		{
			name: "wildcard by default: read everything, and patch it to record intents",
			want: []rbacv1.PolicyRule{
				workspaceAccess, eventWriter,
				{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch", "patch"}},
			},
		},
		{
			name: "narrowed, grouped and sorted",
			resources: []ReadResource{
				{Group: "compute.example.io", Resource: "virtualmachines"},
				{Group: "compute.example.io", Resource: "manageddbs"},
				{Group: "", Resource: "configmaps"},
			},
			want: []rbacv1.PolicyRule{
				workspaceAccess, eventWriter, logicalClusterReader, bindingReader, workspaceLister,
				{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{"compute.example.io"}, Resources: []string{"manageddbs", "virtualmachines"}, Verbs: []string{"get", "list", "watch"}},
			},
		},
		{
			name:      "protected types are read and patched one object at a time, never listed",
			resources: []ReadResource{{Group: "compute.example.io", Resource: "virtualmachines"}},
			protected: []ReadResource{{Group: "network.example.io", Resource: "vpcs"}, {Group: "network.example.io", Resource: "subnets"}},
			reindex:   true,
			want: []rbacv1.PolicyRule{
				workspaceAccess, eventWriter, logicalClusterReader, bindingReader, workspaceLister,
				{APIGroups: []string{"compute.example.io"}, Resources: []string{"virtualmachines"}, Verbs: []string{"get", "list", "watch", "patch"}},
				{APIGroups: []string{"network.example.io"}, Resources: []string{"subnets", "vpcs"}, Verbs: []string{"get", "list", "patch"}},
			},
		},
		{
			name: "re-indexing patches the named types",
			resources: []ReadResource{
				{Group: "compute.example.io", Resource: "virtualmachines"},
				{Group: "", Resource: "configmaps"},
			},
			reindex: true,
			want: []rbacv1.PolicyRule{
				workspaceAccess, eventWriter, logicalClusterReader, bindingReader, workspaceLister,
				{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "patch"}},
				{APIGroups: []string{"compute.example.io"}, Resources: []string{"virtualmachines"}, Verbs: []string{"get", "list", "watch", "patch"}},
			},
		},
		{
			name:    "re-indexing adds nothing to the wildcard",
			reindex: true,
			want: []rbacv1.PolicyRule{
				workspaceAccess, eventWriter,
				{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch", "patch"}},
			},
		},
		{
			name:      "deferred deletion on the wildcard: delete the protected types only, and review whoever asked",
			protected: []ReadResource{{Group: "network.example.io", Resource: "vpcs"}, {Group: "network.example.io", Resource: "subnets"}, {Group: "", Resource: "configmaps"}},
			deferred:  true,
			want: []rbacv1.PolicyRule{
				workspaceAccess, eventWriter,
				{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch", "patch"}},
				accessReviewer,
				{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"delete"}},
				{APIGroups: []string{"network.example.io"}, Resources: []string{"subnets", "vpcs"}, Verbs: []string{"delete"}},
			},
		},
		{
			// What the provider's plan refuses; rendered all the same,
			// it deletes nothing rather than everything.
			name:     "deferred deletion on the wildcard with no protected type deletes nothing",
			deferred: true,
			want: []rbacv1.PolicyRule{
				workspaceAccess, eventWriter,
				{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch", "patch"}},
				accessReviewer,
			},
		},
		{
			name:      "deferred deletion narrowed: delete the protected types only, read namespaces one at a time",
			resources: []ReadResource{{Group: "compute.example.io", Resource: "virtualmachines"}},
			protected: []ReadResource{{Group: "network.example.io", Resource: "vpcs"}, {Group: "", Resource: "configmaps"}},
			deferred:  true,
			want: []rbacv1.PolicyRule{
				workspaceAccess, eventWriter, logicalClusterReader, bindingReader, workspaceLister, accessReviewer, namespaceReader,
				{APIGroups: []string{"compute.example.io"}, Resources: []string{"virtualmachines"}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "patch", "delete"}},
				{APIGroups: []string{"network.example.io"}, Resources: []string{"vpcs"}, Verbs: []string{"get", "list", "patch", "delete"}},
			},
		},
		{
			name:      "deferred deletion deletes no dependent type, re-indexed or not",
			resources: []ReadResource{{Group: "compute.example.io", Resource: "virtualmachines"}, {Group: "network.example.io", Resource: "vpcs"}},
			protected: []ReadResource{{Group: "network.example.io", Resource: "vpcs"}},
			reindex:   true,
			deferred:  true,
			want: []rbacv1.PolicyRule{
				workspaceAccess, eventWriter, logicalClusterReader, bindingReader, workspaceLister, accessReviewer, namespaceReader,
				{APIGroups: []string{"compute.example.io"}, Resources: []string{"virtualmachines"}, Verbs: []string{"get", "list", "watch", "patch"}},
				{APIGroups: []string{"network.example.io"}, Resources: []string{"vpcs"}, Verbs: []string{"get", "list", "watch", "patch"}},
				{APIGroups: []string{"network.example.io"}, Resources: []string{"vpcs"}, Verbs: []string{"get", "list", "patch", "delete"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := ShardReader(webhook, ShardAccess{Dependents: tt.resources, Protected: tt.protected, Reindex: tt.reindex, DeferredDeletion: tt.deferred})
			if !reflect.DeepEqual(g.Role.Rules, tt.want) {
				t.Fatalf("rules = %+v\nwant %+v", g.Role.Rules, tt.want)
			}
			if g.Binding.RoleRef.Name != g.Role.Name || !reflect.DeepEqual(g.Binding.Subjects, webhook) {
				t.Fatalf("binding does not bind the role to the subjects: %+v", g.Binding)
			}
		})
	}
}

func TestExportAccessIsScopedToTheExport(t *testing.T) {
	g := ExportAccess("dependencies.opendefense.cloud", []rbacv1.Subject{User("c")})
	for _, r := range g.Role.Rules {
		for _, res := range r.Resources {
			if (res == "apiexports" || res == "apiexports/content") && !reflect.DeepEqual(r.ResourceNames, []string{"dependencies.opendefense.cloud"}) {
				t.Errorf("%s must be limited to the export, got resourceNames %v", res, r.ResourceNames)
			}
		}
	}
}

func TestParseReadResource(t *testing.T) {
	tests := []struct {
		in      string
		want    ReadResource
		wantErr bool
	}{
		{in: "virtualmachines.compute.example.io", want: ReadResource{Group: "compute.example.io", Resource: "virtualmachines"}},
		{in: "configmaps", want: ReadResource{Resource: "configmaps"}},
		{in: "*.compute.example.io", want: ReadResource{Group: "compute.example.io", Resource: "*"}},
		{in: "", wantErr: true},
		{in: "compute.example.io/virtualmachines", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseReadResource(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseReadResource(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
