// Package errtest checks the error a table-driven test case wants.
package errtest

import (
	"strings"
	"testing"
)

// Check fails t at once unless err is what want asks for: no error when
// want is empty, else an error whose message contains want. It reports
// whether err is an error, which is where a case that wanted one usually
// ends.
func Check(t testing.TB, err error, want string) bool {
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
