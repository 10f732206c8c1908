package webhook

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
)

// The webhook configurations declare sideEffects: None, so kcp sends dry-run
// requests too and trusts that answering them changes nothing: no Event, no
// re-index write.

// dryRun reports whether req is a dry run.
func dryRun(req *admissionv1.AdmissionRequest) bool {
	return req.DryRun != nil && *req.DryRun
}

type noSideEffectsKey struct{}

// withoutSideEffects marks ctx as serving a dry run.
func withoutSideEffects(ctx context.Context) context.Context {
	return context.WithValue(ctx, noSideEffectsKey{}, true)
}

// sideEffectsAllowed reports whether work under ctx may write anything.
func sideEffectsAllowed(ctx context.Context) bool {
	return ctx.Value(noSideEffectsKey{}) == nil
}
