// Package check holds the assertions every test package of this repository
// shares: failing on an error, checking the error a table case wants, and
// waiting for a condition.
package check

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Must fails the test at once when err is not nil.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Eventually polls cond until it returns nil, and fails the test with what
// and cond's last error when timeout passes or ctx ends first.
func Eventually(ctx context.Context, t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if last = cond(); last == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, last)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (last: %v)", what, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// WantError fails t at once unless err is what want asks for: no error
// when want is empty, else an error whose message contains want. It
// reports whether err is an error, which is where a table case that
// wanted one usually ends.
func WantError(t testing.TB, err error, want string) bool {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatal(err)
		}
		return false
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v, want one containing %q", err, want)
	}
	return true
}
