package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic"
)

// pollInterval is how often the provider re-reads an object it waits for.
// kcp reconciles within a second or two; polling faster only adds load.
const pollInterval = 500 * time.Millisecond

// waitUntil polls cond until it reports done, fails, or timeout passes. On
// timeout the error names what was awaited and the last state cond
// described, so the user sees why it did not get there.
func waitUntil(ctx context.Context, timeout time.Duration, what string, cond func(ctx context.Context) (done bool, state string, err error)) error {
	return waitUntilWoken(ctx, timeout, what, nil, cond)
}

// waitUntilWoken is waitUntil that also checks cond whenever wake delivers
// (wakeOnChange), not only every pollInterval: what it waits for is seen
// as soon as it happens. A nil wake only polls.
func waitUntilWoken(ctx context.Context, timeout time.Duration, what string, wake <-chan struct{}, cond func(ctx context.Context) (done bool, state string, err error)) error {
	var last string
	var lastErr error
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		done, state, err := cond(ctx)
		if state != "" {
			last = state
		}
		var permanent *permanentError
		if errors.As(err, &permanent) {
			return permanent.err
		}
		// Waiting does not cure refused credentials or permissions, and kcp
		// answers 403 for a workspace that does not exist.
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			return err
		}
		if done && err == nil {
			return nil
		}
		// Anything else may be transient (a shard restarting, a cache
		// catching up); remember it for the timeout message.
		lastErr = err
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("timed out after %s waiting for %s", timeout, what)
			if last != "" {
				msg += "; last seen: " + last
			}
			if lastErr != nil {
				return fmt.Errorf("%s: %w", msg, lastErr)
			}
			return errors.New(msg)
		case <-ticker.C:
		case <-wake:
		}
	}
}

// wakeOnChange watches the object called name through res and delivers on
// the returned channel after each change to it, until stop is called (the
// waiter defers it) or ctx ends. A watch that cannot start or ends early
// only leaves the waiter to its polls, so it returns a nil channel (never
// delivers) rather than an error.
func wakeOnChange(ctx context.Context, res dynamic.ResourceInterface, name string) (changed <-chan struct{}, stop func()) {
	ctx, stop = context.WithCancel(ctx)
	w, err := res.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		tflog.Debug(ctx, "not watching while waiting; polling only", map[string]interface{}{"name": name, "error": err.Error()})
		return nil, stop
	}
	wake := make(chan struct{}, 1)
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-w.ResultChan():
				if !ok {
					return
				}
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}
	}()
	return wake, stop
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

// waitGone waits until get, a read of what, answers NotFound.
func waitGone(ctx context.Context, timeout time.Duration, what string, get func(context.Context) error) error {
	return waitUntil(ctx, timeout, what+" to be deleted", func(ctx context.Context) (bool, string, error) {
		err := get(ctx)
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "still present", err
	})
}
