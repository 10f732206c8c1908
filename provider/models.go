package provider

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
)

// modelSource is what a model is read from: a request's plan, state,
// config or identity.
type modelSource interface {
	Get(ctx context.Context, target any) diag.Diagnostics
}

// getModel reads from into a new M. ok is false when diags holds an
// error, from this read or an earlier one, so that a method that reads
// several (a plan and its state) can check once, after the last.
func getModel[M any](ctx context.Context, from modelSource, diags *diagnostics) (m M, ok bool) {
	diags.Append(from.Get(ctx, &m)...)
	return m, !diags.HasError()
}

// withTimeouts is a resource model with a timeouts block.
type withTimeouts interface{ timeoutsField() *timeouts.Value }

// timed is the timeouts block of a resource's model, embedded in it.
type timed struct {
	Timeouts timeouts.Value `tfsdk:"timeouts"`
}

func (m *timed) timeoutsField() *timeouts.Value { return &m.Timeouts }

// timeoutOp is how one operation reads its timeout from a timeouts
// block: timeouts.Value.Create, Update or Delete.
type timeoutOp func(timeouts.Value, context.Context, time.Duration) (time.Duration, diag.Diagnostics)

// getTimed is getModel for a create, update or delete: it also returns
// how long op may take, def unless the model's timeouts block says
// otherwise.
func getTimed[M any, P interface {
	*M
	withTimeouts
}](ctx context.Context, from modelSource, op timeoutOp, def time.Duration, diags *diagnostics) (m M, timeout time.Duration, ok bool) {
	if m, ok = getModel[M](ctx, from, diags); !ok {
		return m, 0, false
	}
	timeout, d := op(*P(&m).timeoutsField(), ctx, def)
	diags.Append(d...)
	return m, timeout, !diags.HasError()
}
