package controller

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/util/workqueue"
)

// TestNoteUnread: what a run could not read shows in the metric and in
// readiness, and brings another run within Reread, until a run reads
// everything again.
func TestNoteUnread(t *testing.T) {
	forbidden := `reading workspace "root:org:network" (while resolving "root:org:network"): forbidden`
	plan := func(unread map[string]map[string]string) *Plan {
		p := &Plan{Rules: map[string]*RulePlan{"comp/ok": {}}}
		for key, u := range unread {
			p.Rules[key] = &RulePlan{Unread: u}
		}
		return p
	}
	s := &Syncer{Log: logr.Discard(), Reread: 10 * time.Millisecond}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[planKey]())
	defer q.ShutDown()
	s.queue.Store(&q)
	s.leading.Store(true)
	s.synced.Store(true)
	ready := s.ReadyCheck(nil)
	for _, step := range []struct {
		name                      string
		plan                      *Plan
		wantWorkspace, wantExport float64
		// wantNotReady is in the readiness message; "" for ready.
		wantNotReady string
	}{{
		name: "every rule read",
		plan: plan(nil),
	}, {
		name:          "the grant to resolve a workspace removed",
		plan:          plan(map[string]map[string]string{"comp/vm": {UnreadWorkspace: forbidden}}),
		wantWorkspace: 1,
		wantNotReady:  "rule comp/vm (workspace): " + forbidden,
	}, {
		name:          "an export cannot be read either",
		plan:          plan(map[string]map[string]string{"comp/vm": {UnreadWorkspace: forbidden}, "comp/db": {UnreadExport: "reading APIExport x: forbidden"}}),
		wantWorkspace: 1, wantExport: 1,
		wantNotReady: "rule comp/db (export): reading APIExport x: forbidden; rule comp/vm (workspace)",
	}, {
		name: "the grant restored",
		plan: plan(nil),
	}} {
		t.Run(step.name, func(t *testing.T) {
			for q.Len() > 0 { // a run pending from an earlier step
				k, _ := q.Get()
				q.Done(k)
			}
			s.noteUnread(step.plan)
			if got := testutil.ToFloat64(rulesUnread.WithLabelValues(UnreadWorkspace)); got != step.wantWorkspace {
				t.Errorf("rules unread for a workspace: %v, want %v", got, step.wantWorkspace)
			}
			if got := testutil.ToFloat64(rulesUnread.WithLabelValues(UnreadExport)); got != step.wantExport {
				t.Errorf("rules unread for an export: %v, want %v", got, step.wantExport)
			}
			err := ready(httptest.NewRequest("GET", "/readyz", nil))
			switch {
			case step.wantNotReady == "" && err != nil:
				t.Errorf("not ready: %v", err)
			case step.wantNotReady != "" && (err == nil || !strings.Contains(err.Error(), step.wantNotReady)):
				t.Errorf("readiness %v, want not ready naming %q", err, step.wantNotReady)
			}
			run := false
			for deadline := time.Now().Add(time.Second); !run && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				run = q.Len() > 0
			}
			switch {
			case run && step.wantNotReady == "":
				t.Error("a run was started although everything was read")
			case !run && step.wantNotReady != "":
				t.Errorf("no run within a second, with Reread %s, although a rule could not be read", s.Reread)
			}
		})
	}
}
