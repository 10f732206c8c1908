package controller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestGenerationHold: a rule's generation is held back from Ready for
// RuleReadMaxAge after the controller first saw it, a new generation or a
// rule recreated under the same name starts again, and a generation the
// status already reports Ready (a restarted controller) is not held.
func TestGenerationHold(t *testing.T) {
	t0 := time.Unix(1000, 0)
	h := &generationHold{MaxAge: 2 * time.Second}
	steps := []struct {
		name     string
		uid      string
		gen      int64
		reported bool
		at       time.Duration
		want     time.Duration
	}{
		{"first seen", "u1", 1, false, 0, 2 * time.Second},
		{"seen again, later", "u1", 1, false, 1500 * time.Millisecond, 500 * time.Millisecond},
		{"held long enough", "u1", 1, false, 2 * time.Second, 0},
		{"edited: a new generation waits again", "u1", 2, false, 3 * time.Second, 2 * time.Second},
		{"recreated under the same name", "u2", 2, false, 4 * time.Second, 2 * time.Second},
		{"a generation already reported Ready", "u3", 7, true, 5 * time.Second, 0},
	}
	for _, s := range steps {
		if got := h.wait("c/r", types.UID(s.uid), s.gen, s.reported, t0.Add(s.at)); got != s.want {
			t.Errorf("%s: wait %s, want %s", s.name, got, s.want)
		}
	}
	h.keep(map[string]bool{"c/other": true})
	if len(h.first) != 0 {
		t.Errorf("a rule gone is remembered: %v", h.first)
	}
}
