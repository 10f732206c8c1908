package v1alpha1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestParseDeferredDeletion: only a record the webhook can have written
// reads back; anything else is refused.
func TestParseDeferredDeletion(t *testing.T) {
	fg := metav1.DeletePropagationForeground
	good := DeferredDeletion{User: "alice", Groups: []string{"g"}, At: metav1.NewTime(time.Unix(1000, 0)), UID: "u1", PropagationPolicy: &fg}
	value, err := good.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseDeferredDeletion(value)
	if err != nil || got.User != "alice" || got.UID != "u1" || *got.PropagationPolicy != fg || !got.At.Equal(&good.At) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for name, bad := range map[string]string{
		"not JSON":       "yes",
		"no user":        `{"at":"2026-01-01T00:00:00Z","uid":"u1"}`,
		"no time":        `{"user":"alice","uid":"u1"}`,
		"no UID":         `{"user":"alice","at":"2026-01-01T00:00:00Z"}`,
		"unknown policy": `{"user":"alice","at":"2026-01-01T00:00:00Z","uid":"u1","propagationPolicy":"Sideways"}`,
	} {
		if _, err := ParseDeferredDeletion(bad); err == nil {
			t.Errorf("%s: %q read as a record", name, bad)
		}
	}
}

// TestDefersDeletion: the object's annotation decides when it has one,
// else its namespace's, else the rules; only "true" opts in.
func TestDefersDeletion(t *testing.T) {
	on := map[string]string{DeferDeletionAnnotation: "true"}
	off := map[string]string{DeferDeletionAnnotation: "false"}
	odd := map[string]string{DeferDeletionAnnotation: "yes"}
	for _, tc := range []struct {
		name    string
		obj, ns map[string]string
		rule    bool
		want    bool
	}{
		{"object on", on, nil, false, true},
		{"namespace on", nil, on, false, true},
		{"object off wins", off, on, true, false},
		{"object on wins", on, off, false, true},
		{"neither", nil, nil, false, false},
		{"only true counts", odd, on, true, false},
		{"a rule defers", nil, nil, true, true},
		{"the namespace's false wins over the rule", nil, off, true, false},
	} {
		if got := DefersDeletion(tc.obj, tc.ns, tc.rule); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
