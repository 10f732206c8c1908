package provider

import (
	"testing"
	"time"
)

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		10 * time.Minute:                "10m",
		time.Minute:                     "1m",
		20 * time.Minute:                "20m",
		45 * time.Second:                "45s",
		90 * time.Second:                "1m30s",
		time.Hour:                       "1h",
		time.Hour + 30*time.Minute:      "1h30m",
		2*time.Hour + 10*time.Second:    "2h0m10s",
		500 * time.Millisecond:          "500ms",
		10*time.Minute + 10*time.Second: "10m10s",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%s) = %q, want %q", d, got, want)
		}
	}
}
