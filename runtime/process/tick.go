package process

import (
	"context"
	"time"
)

// Every runs a process's periodic work: it calls f every period until ctx
// ends, the first time one period after it is called; a call that outlasts
// the period delays the next rather than overlapping it.
func Every(ctx context.Context, period time.Duration, f func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}
