package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
)

// pollInterval is how often the provider re-reads an object it waits for.
// kcp reconciles within a second or two; polling faster only adds load.
const pollInterval = 500 * time.Millisecond

// waitUntil polls cond until it reports done, fails, or timeout passes. On
// timeout the error names what was awaited and the last state cond
// described, so the user sees why it did not get there.
func waitUntil(ctx context.Context, timeout time.Duration, what string, cond func(ctx context.Context) (done bool, state string, err error)) error {
	var last string
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		done, state, err := cond(ctx)
		if state != "" {
			last = state
		}
		var permanent *permanentError
		if errors.As(err, &permanent) {
			return false, permanent.err
		}
		// Waiting does not cure refused credentials or permissions, and kcp
		// answers 403 for a workspace that does not exist.
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			return false, err
		}
		// Anything else may be transient (a shard restarting, a cache
		// catching up); remember it for the timeout message.
		lastErr = err
		return done && err == nil, nil
	})
	if err == nil {
		return nil
	}
	if ctx.Err() == nil && !wait.Interrupted(err) {
		return err
	}
	msg := fmt.Sprintf("timed out after %s waiting for %s", timeout, what)
	if last != "" {
		msg += "; last seen: " + last
	}
	if lastErr != nil {
		return fmt.Errorf("%s: %w", msg, lastErr)
	}
	return errors.New(msg)
}

// permanentError stops waitUntil at once.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return &permanentError{err: err} }

// permanentUnlessNil is permanent(err) for a non-nil err, so that a
// condition can hand back the result of a one-shot call unchanged.
func permanentUnlessNil(err error) error {
	if err == nil {
		return nil
	}
	return permanent(err)
}
