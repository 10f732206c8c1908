package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
)

// TestEveryResourceHasAnIdentity: every resource names its object in an
// identity, and every identity attribute says what it is and whether an
// import block must give it.
func TestEveryResourceHasAnIdentity(t *testing.T) {
	ctx := context.Background()
	for _, newResource := range New("test")().Resources(ctx) {
		r := newResource()
		var meta fwresource.MetadataResponse
		r.Metadata(ctx, fwresource.MetadataRequest{ProviderTypeName: "depctrl"}, &meta)
		withIdentity, ok := r.(fwresource.ResourceWithIdentity)
		if !ok {
			t.Errorf("%s has no identity", meta.TypeName)
			continue
		}
		var resp fwresource.IdentitySchemaResponse
		withIdentity.IdentitySchema(ctx, fwresource.IdentitySchemaRequest{}, &resp)
		if resp.Diagnostics.HasError() || len(resp.IdentitySchema.Attributes) == 0 {
			t.Errorf("%s: empty identity schema: %v", meta.TypeName, resp.Diagnostics)
		}
		if resp.IdentitySchema.Version != 0 {
			t.Errorf("%s: identity schema version %d: a new version needs an identity upgrader", meta.TypeName, resp.IdentitySchema.Version)
		}
		required := 0
		for name, a := range resp.IdentitySchema.Attributes {
			if a.GetDescription() == "" {
				t.Errorf("%s: identity attribute %s has no description", meta.TypeName, name)
			}
			if a.IsRequiredForImport() {
				required++
			} else if !a.IsOptionalForImport() {
				t.Errorf("%s: identity attribute %s is neither required nor optional for import", meta.TypeName, name)
			}
		}
		if required == 0 && meta.TypeName != "depctrl_root_rbac" {
			t.Errorf("%s: no identity attribute is required for import", meta.TypeName)
		}
	}
}

// TestImportByIdentity: an import block's identity sets what the import ID
// would, and the identity the import returns holds only what names the
// object.
func TestImportByIdentity(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		resource fwresource.Resource
		identity map[string]any
		// wantState by attribute path (dots for nested attributes); "-"
		// means null.
		wantState    map[string]string
		wantIdentity map[string]any
		err          string
	}{
		{
			name: "workspace", resource: NewWorkspaceResource(),
			identity:     map[string]any{"path": "root:org:network"},
			wantState:    map[string]string{"id": "root:org:network", "parent_path": "root:org", "name": "network"},
			wantIdentity: map[string]any{"path": "root:org:network"},
		},
		{name: "workspace root", resource: NewWorkspaceResource(), identity: map[string]any{"path": "root"}, err: "not a workspace path below root"},
		{
			name: "export", resource: NewExportResource(),
			identity:     map[string]any{"workspace_path": "root:depctrl", "name": "dependencies.opendefense.cloud"},
			wantState:    map[string]string{"id": "root:depctrl/dependencies.opendefense.cloud", "workspace_path": "root:depctrl", "name": "dependencies.opendefense.cloud"},
			wantIdentity: map[string]any{"workspace_path": "root:depctrl", "name": "dependencies.opendefense.cloud"},
		},
		{
			name: "binding", resource: NewProviderBindingResource(),
			identity:  map[string]any{"workspace_path": "root:org:network", "name": "dep-ctrl"},
			wantState: map[string]string{"id": "root:org:network/dep-ctrl"},
		},
		{name: "binding without a name", resource: NewProviderBindingResource(), identity: map[string]any{"workspace_path": "root:org"}, err: "do not name a binding"},
		{
			name: "rule", resource: NewDependencyRuleResource(),
			identity:  map[string]any{"workspace_path": "root:compute", "name": "vm-needs-vpc"},
			wantState: map[string]string{"id": "root:compute/vm-needs-vpc", "wait_for_enforcement": "true"},
		},
		{name: "rule in a bad path", resource: NewDependencyRuleResource(), identity: map[string]any{"workspace_path": "root::x", "name": "r"}, err: "such as root:compute"},
		{
			name: "root rbac", resource: NewRootRBACResource(),
			identity:     map[string]any{"parent_paths": []string{"root:org", "root:a"}},
			wantState:    map[string]string{"id": "root,root:a,root:org", "name": rbac.WorkspaceReaderName},
			wantIdentity: map[string]any{"name": rbac.WorkspaceReaderName, "parent_paths": []string{"root:a", "root:org"}},
		},
		{
			name: "root rbac, root alone and named", resource: NewRootRBACResource(),
			identity:     map[string]any{"name": "reader"},
			wantState:    map[string]string{"id": "root/reader", "name": "reader", "parent_paths": "-"},
			wantIdentity: map[string]any{"name": "reader", "parent_paths": nil},
		},
		{name: "root rbac with root", resource: NewRootRBACResource(), identity: map[string]any{"parent_paths": []string{"root"}}, err: "not a workspace path below root"},
		{
			name: "shard", resource: NewShardResource(),
			identity:     map[string]any{"name": "shard-1", "kubeconfig_path": "shard-1.kubeconfig", "context": "admin", "url": "https://shard-1:6443"},
			wantState:    map[string]string{"id": "shard-1", "name": "shard-1", "grant_name": rbac.ShardReaderName, "kubeconfig_path": "shard-1.kubeconfig", "context": "admin", "url": "https://shard-1:6443"},
			wantIdentity: map[string]any{"name": "shard-1", "grant_name": rbac.ShardReaderName, "kubeconfig_path": nil, "context": nil, "url": nil},
		},
		{
			name: "shard by certificate", resource: NewShardResource(),
			identity:  map[string]any{"name": "shard-1", "grant_name": "g", "client_certificate_path": "c.crt", "client_key_path": "c.key"},
			wantState: map[string]string{"grant_name": "g", "client_certificate_path": "c.crt", "client_key_path": "c.key", "kubeconfig_path": "-"},
		},
		{
			// The credentials come from the provider block's shard_credentials.
			name: "shard without credentials", resource: NewShardResource(), identity: map[string]any{"name": "shard-1"},
			wantState: map[string]string{"name": "shard-1", "grant_name": rbac.ShardReaderName, "kubeconfig_path": "-", "client_certificate_path": "-"},
		},
		{name: "shard with two kinds of credentials", resource: NewShardResource(), identity: map[string]any{"name": "s", "kubeconfig_path": "k", "client_certificate_path": "c", "client_key_path": "c.key"}, err: "at most one of kubeconfig_path and client_certificate_path"},
		{name: "shard key without certificate", resource: NewShardResource(), identity: map[string]any{"name": "s", "kubeconfig_path": "k", "client_key_path": "c.key"}, err: "go together"},
		{name: "shard context without kubeconfig", resource: NewShardResource(), identity: map[string]any{"name": "s", "client_certificate_path": "c", "client_key_path": "k", "context": "x"}, err: "context needs kubeconfig_path"},
		{
			name: "runtime", resource: NewRuntimeResource(),
			identity: map[string]any{"namespace": "depctrl-system", "workspace_path": "root:depctrl", "controller_kubeconfig_path": "c.kubeconfig", "controller_context": "admin",
				"webhook_kubeconfig_path": "w.kubeconfig", "webhook_certificate_validity": "1h"},
			wantState: map[string]string{"id": "depctrl-system/depctrl", "name": "depctrl", "workspace_path": "root:depctrl", "controller.kubeconfig_path": "c.kubeconfig",
				"controller.context": "admin", "webhook.kubeconfig_path": "w.kubeconfig", "webhook.certificate_validity": "1h"},
			wantIdentity: map[string]any{"namespace": "depctrl-system", "name": "depctrl", "workspace_path": nil, "controller_kubeconfig_path": nil},
		},
		{name: "runtime webhook context alone", resource: NewRuntimeResource(), identity: map[string]any{"namespace": "ns", "webhook_context": "admin"}, err: "webhook.context in the identity needs webhook.kubeconfig_path"},
		{name: "runtime bad namespace", resource: NewRuntimeResource(), identity: map[string]any{"namespace": "NS"}, err: "are not a namespace and a name"},
		{
			name: "object", resource: NewObjectResource(),
			identity: map[string]any{"workspace_path": "root:team-a", "api_version": "network.example.io/v1", "kind": "VPC", "namespace": "apps", "name": "vpc-1"},
			wantState: map[string]string{"id": "root:team-a/network.example.io/v1/VPC/apps/vpc-1", "workspace_path": "root:team-a", "wait_for_deletion": "true",
				"manifest": `{\"apiVersion\":\"network.example.io/v1\",\"kind\":\"VPC\",\"metadata\":{\"name\":\"vpc-1\",\"namespace\":\"apps\"}}`},
			wantIdentity: map[string]any{"workspace_path": "root:team-a", "api_version": "network.example.io/v1", "kind": "VPC", "namespace": "apps", "name": "vpc-1"},
		},
		{
			name: "object, cluster-scoped", resource: NewObjectResource(),
			identity:     map[string]any{"workspace_path": "root:team-a", "api_version": "v1", "kind": "Namespace", "name": "apps"},
			wantState:    map[string]string{"id": "root:team-a/v1/Namespace//apps"},
			wantIdentity: map[string]any{"namespace": nil, "name": "apps"},
		},
		{name: "object without a kind", resource: NewObjectResource(), identity: map[string]any{"workspace_path": "root:team-a", "api_version": "v1", "name": "apps"}, err: "the kind is empty"},
		{name: "object in a bad path", resource: NewObjectResource(), identity: map[string]any{"workspace_path": "team-a", "api_version": "v1", "kind": "Namespace", "name": "apps"}, err: "not a workspace path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sr fwresource.SchemaResponse
			tt.resource.Schema(ctx, fwresource.SchemaRequest{}, &sr)
			var ir fwresource.IdentitySchemaResponse
			tt.resource.(fwresource.ResourceWithIdentity).IdentitySchema(ctx, fwresource.IdentitySchemaRequest{}, &ir)
			identityType := ir.IdentitySchema.Type().TerraformType(ctx).(tftypes.Object)
			vals := map[string]tftypes.Value{}
			for name, typ := range identityType.AttributeTypes {
				vals[name] = tftypes.NewValue(typ, nil)
			}
			for name, v := range tt.identity {
				typ, ok := identityType.AttributeTypes[name]
				if !ok {
					t.Fatalf("no identity attribute %s", name)
				}
				switch v := v.(type) {
				case string:
					vals[name] = tftypes.NewValue(typ, v)
				case []string:
					var elems []tftypes.Value
					for _, e := range v {
						elems = append(elems, tftypes.NewValue(tftypes.String, e))
					}
					vals[name] = tftypes.NewValue(typ, elems)
				}
			}
			given := &tfsdk.ResourceIdentity{Schema: ir.IdentitySchema, Raw: tftypes.NewValue(identityType, vals)}
			resp := &fwresource.ImportStateResponse{
				State:    tfsdk.State{Schema: sr.Schema, Raw: tftypes.NewValue(sr.Schema.Type().TerraformType(ctx), nil)},
				Identity: &tfsdk.ResourceIdentity{Schema: ir.IdentitySchema, Raw: given.Raw.Copy()},
			}
			tt.resource.(fwresource.ResourceWithImportState).ImportState(ctx, fwresource.ImportStateRequest{Identity: given}, resp)
			if tt.err != "" {
				if !resp.Diagnostics.HasError() || !strings.Contains(resp.Diagnostics.Errors()[0].Detail(), tt.err) ||
					resp.Diagnostics.Errors()[0].Summary() != "Invalid import identity" {
					t.Fatalf("want an Invalid import identity error saying %q, got %v", tt.err, resp.Diagnostics)
				}
				return
			}
			if resp.Diagnostics.HasError() {
				t.Fatal(resp.Diagnostics)
			}
			for at, want := range tt.wantState {
				p := path.Empty()
				for _, step := range strings.Split(at, ".") {
					p = p.AtName(step)
				}
				var got attr.Value
				if d := resp.State.GetAttribute(ctx, p, &got); d.HasError() {
					t.Fatalf("%s: %v", at, d)
				}
				if want == "-" {
					if !got.IsNull() {
						t.Errorf("state %s = %s, want null", at, got)
					}
					continue
				}
				if s := strings.Trim(got.String(), `"`); s != want {
					t.Errorf("state %s = %s, want %s", at, s, want)
				}
			}
			for name, want := range tt.wantIdentity {
				var got attr.Value
				if d := resp.Identity.GetAttribute(ctx, path.Root(name), &got); d.HasError() {
					t.Fatalf("identity %s: %v", name, d)
				}
				switch want := want.(type) {
				case nil:
					if !got.IsNull() {
						t.Errorf("identity %s = %s, want null", name, got)
					}
				case string:
					if got.String() != `"`+want+`"` {
						t.Errorf("identity %s = %s, want %q", name, got, want)
					}
				case []string:
					if got.String() != `["`+strings.Join(want, `","`)+`"]` {
						t.Errorf("identity %s = %s, want %q", name, got, want)
					}
				}
			}
		})
	}
}
