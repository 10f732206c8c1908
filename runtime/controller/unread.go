package controller

import (
	"fmt"
	"maps"
	"strings"
	"time"
)

// DefaultReread is the default of Syncer.Reread.
const DefaultReread = 5 * time.Second

// unreadRules is what a run could not read for each rule: by rule key, by
// what (UnreadWorkspace, UnreadExport), why.
type unreadRules map[string]map[string]string

// unreadOf collects what the plan's rules could not read.
func unreadOf(plan *Plan) unreadRules {
	out := unreadRules{}
	for key, rp := range plan.Rules {
		if len(rp.Unread) > 0 {
			out[key] = rp.Unread
		}
	}
	return out
}

// count is how many rules could not read what.
func (u unreadRules) count(what string) int {
	n := 0
	for _, r := range u {
		if _, ok := r[what]; ok {
			n++
		}
	}
	return n
}

// equal reports whether u and o name the same failures.
func (u unreadRules) equal(o unreadRules) bool {
	return maps.EqualFunc(u, o, func(a, b map[string]string) bool { return maps.Equal(a, b) })
}

// unreadShown is how many rules a readiness message names.
const unreadShown = 3

// String names the first rules, sorted, with what could not be read and
// why, for the readiness probe.
func (u unreadRules) String() string {
	keys := sortedKeys(u)
	var parts []string
	for _, key := range keys[:min(len(keys), unreadShown)] {
		whats := sortedKeys(u[key])
		for _, what := range whats {
			parts = append(parts, fmt.Sprintf("rule %s (%s): %s", key, what, u[key][what]))
		}
	}
	if len(keys) > unreadShown {
		parts = append(parts, fmt.Sprintf("and %d more rule(s)", len(keys)-unreadShown))
	}
	return strings.Join(parts, "; ")
}

// noteUnread records what the run planned as plan could not read: for
// readiness, in the metric, in the log when it changes, and by starting
// another run within s.Reread while anything could not be read.
func (s *Syncer) noteUnread(plan *Plan) {
	now := unreadOf(plan)
	prev := s.unread.Swap(&now)
	for _, what := range []string{UnreadWorkspace, UnreadExport} {
		rulesUnread.WithLabelValues(what).Set(float64(now.count(what)))
	}
	switch {
	case len(now) > 0 && (prev == nil || !prev.equal(now)):
		s.Log.Error(fmt.Errorf("%d rule(s) cannot be read: %s", len(now), now), "cannot read what rules need; what is installed for them is kept as it is, and read again",
			"rules", sortedKeys(now), "after", s.Reread)
	case len(now) == 0 && prev != nil && len(*prev) > 0:
		s.Log.Info("what every rule needs can be read again", "rules", sortedKeys(*prev))
	}
	if len(now) > 0 {
		time.AfterFunc(s.Reread, s.Trigger)
	}
}
