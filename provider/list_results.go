package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
)

// listResult builds one result: its display name, its identity and, when
// Terraform asked for resources, the resource's state as fill writes it
// into the (null) resource object.
func listResult(ctx context.Context, req list.ListRequest, display string, identity any, fill func(*tfsdk.Resource) diag.Diagnostics) list.ListResult {
	result := req.NewListResult(ctx)
	result.DisplayName = display
	result.Diagnostics.Append(result.Identity.Set(ctx, identity)...)
	if req.IncludeResource {
		result.Diagnostics.Append(fill(result.Resource)...)
	}
	return result
}

// setModel is a fill that records a whole model, as Read would: the
// model's timeouts first get the schema's typed null value, so that Set
// accepts them; then set fills the rest.
func setModel[M withTimeouts](ctx context.Context, m M, set func()) func(*tfsdk.Resource) diag.Diagnostics {
	return func(r *tfsdk.Resource) diag.Diagnostics {
		diags := r.GetAttribute(ctx, path.Root("timeouts"), m.timeoutsField())
		set()
		diags.Append(r.Set(ctx, m)...)
		return diags
	}
}

// listError is a stream holding one error, for a List that fails before
// it streams anything.
func listError(d diag.Diagnostic) func(func(list.ListResult) bool) {
	return list.ListResultsStreamDiagnostics(diag.Diagnostics{d})
}

// pushError streams a result holding one error, for a List that fails
// while streaming; it returns what push does (false: stop).
func pushError(ctx context.Context, req list.ListRequest, push func(list.ListResult) bool, d diag.Diagnostic) bool {
	result := req.NewListResult(ctx)
	result.Diagnostics.Append(d)
	return push(result)
}
