package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// Resource identity (Terraform 1.12 and later, OpenTofu 1.12 and later):
// every resource names the kcp or Kubernetes objects it manages in an
// identity beside its state, which an import block may give instead of the
// import ID:
//
//	import {
//	  to       = depctrl_dependency_rule.vm_needs_vpc
//	  identity = { workspace_path = "root:compute", name = "vm-needs-vpc" }
//	}
//
// Identities are set on create, read and import, and never change over a
// resource's life except depctrl_root_rbac's, whose parent_paths are part
// of what it manages and may be updated in place, and depctrl_object's,
// whose api_version changes with a manifest that reads the same object in
// another version. Some import IDs carry more than the name of the
// object: where the credentials for a shard are,
// or what a runtime's configuration says that the cluster does not record.
// Their identities have the same as attributes that only an import block
// sets (OptionalForImport) and that are always null in the stored
// identity: they say how to import, not what is managed.
//
// The identity schemas are at version 0. Changing an attribute's name or
// meaning needs a new version and an identity upgrader, so that identities
// stored by an older provider keep working.

// byIdentity reports whether an import came from an import block's
// identity rather than an import ID.
func byIdentity(req resource.ImportStateRequest) bool {
	return req.ID == "" && req.Identity != nil && !req.Identity.Raw.IsNull()
}

// setIdentity records identity in into, which is nil where the client
// keeps no identities.
func setIdentity(ctx context.Context, into *tfsdk.ResourceIdentity, identity any, diags *diagnostics) {
	if into == nil {
		return
	}
	diags.Append(into.Set(ctx, identity)...)
}

// saveState records the outcome of a create or update, the model m and its
// identity, unless diags holds an error: a failed apply leaves the state
// as it was.
func saveState(ctx context.Context, state *tfsdk.State, into *tfsdk.ResourceIdentity, m, identity any, diags *diagnostics) {
	if diags.HasError() {
		return
	}
	diags.Append(state.Set(ctx, m)...)
	setIdentity(ctx, into, identity, diags)
}

// workspaceObjectIdentity is the identity of a resource that manages one
// named object in one workspace: a depctrl_export, depctrl_provider_binding
// or depctrl_dependency_rule. Its import ID is <workspace_path>/<name>.
type workspaceObjectIdentity struct {
	WorkspacePath types.String `tfsdk:"workspace_path"`
	Name          types.String `tfsdk:"name"`
}

// workspaceObjectModel is the part of the model of such a resource that
// names its object: the import ID and what the identity holds.
type workspaceObjectModel struct {
	ID            types.String `tfsdk:"id"`
	WorkspacePath types.String `tfsdk:"workspace_path"`
	Name          types.String `tfsdk:"name"`
}

func (m *workspaceObjectModel) identity() workspaceObjectIdentity {
	return workspaceObjectIdentity{WorkspacePath: m.WorkspacePath, Name: m.Name}
}

func workspaceObjectIdentityOf(ws, name string) workspaceObjectIdentity {
	return workspaceObjectIdentity{WorkspacePath: types.StringValue(ws), Name: types.StringValue(name)}
}

// workspaceObjectIdentitySchema describes workspaceObjectIdentity; object
// says what the name names, such as "The APIExport's name".
func workspaceObjectIdentitySchema(workspace, object string) identityschema.Schema {
	return identityschema.Schema{
		Attributes: map[string]identityschema.Attribute{
			"workspace_path": identityschema.StringAttribute{
				RequiredForImport: true,
				Description:       workspace,
			},
			"name": identityschema.StringAttribute{
				RequiredForImport: true,
				Description:       object,
			},
		},
	}
}

// removeFromState drops a resource that Read found gone. The framework
// wants an identity after every Read that returns no error, also one that
// removes the resource (a CLI without identities, such as Terraform 1.11,
// hands Read none to keep), so identity is set first.
func removeFromState(ctx context.Context, resp *resource.ReadResponse, identity any) {
	setIdentity(ctx, resp.Identity, identity, &resp.Diagnostics)
	resp.State.RemoveResource(ctx)
}
