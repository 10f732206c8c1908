package admission

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
)

// The webhook configurations declare sideEffects: None, so kcp sends dry-run
// requests too and trusts that answering them changes nothing: no Event, no
// re-index write.

// DryRun reports whether req is a dry run.
func DryRun(req *admissionv1.AdmissionRequest) bool {
	return req.DryRun != nil && *req.DryRun
}

type noSideEffectsKey struct{}

// WithoutSideEffects marks ctx as serving a dry run.
func WithoutSideEffects(ctx context.Context) context.Context {
	return context.WithValue(ctx, noSideEffectsKey{}, true)
}

// SideEffectsAllowed reports whether work under ctx may write anything.
func SideEffectsAllowed(ctx context.Context) bool {
	return ctx.Value(noSideEffectsKey{}) == nil
}
