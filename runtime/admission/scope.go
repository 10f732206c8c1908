package admission

import (
	"context"

	"github.com/depctrl/terraform-provider-depctrl/runtime/scope"
)

type scopeKey struct{}

// withScope returns ctx carrying the scope of the request's URL.
func withScope(ctx context.Context, sc scope.Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, sc)
}

// ScopeOf is the scope of the request being decided: Unnamed unless the
// request's URL named one.
func ScopeOf(ctx context.Context) scope.Scope {
	sc, _ := ctx.Value(scopeKey{}).(scope.Scope)
	return sc
}
