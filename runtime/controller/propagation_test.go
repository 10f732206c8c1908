package controller

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestPropagation(t *testing.T) {
	vpcs := gvr("network.test.io", "vpcs")
	subnets := gvr("network.test.io", "subnets")
	s := NewSyncer(nil, nil, nil, logr.Discard())
	s.Propagation = 5 * time.Second
	t0 := time.Now()
	rule := RuleInput{Dependencies: []DependencyInput{{GVR: vpcs}}}

	// Written now: the rule waits the full delay.
	s.recordWritten("net", []schema.GroupVersionResource{vpcs}, map[schema.GroupVersionResource]bool{vpcs: true}, t0)
	if got := s.propagating([]string{"net"}, rule, t0); got != 5*time.Second {
		t.Fatalf("just written: wait %s, want 5s", got)
	}
	if got := s.propagating([]string{"net"}, rule, t0.Add(2*time.Second)); got != 3*time.Second {
		t.Fatalf("after 2s: wait %s, want 3s", got)
	}
	if got := s.propagating([]string{"net"}, rule, t0.Add(6*time.Second)); got != 0 {
		t.Fatalf("after 6s: wait %s, want 0", got)
	}
	// Adding another resource later does not delay a rule on vpcs.
	s.recordWritten("net", []schema.GroupVersionResource{vpcs, subnets}, map[schema.GroupVersionResource]bool{subnets: true}, t0.Add(10*time.Second))
	if got := s.propagating([]string{"net"}, rule, t0.Add(10*time.Second)); got != 0 {
		t.Fatalf("unrelated addition delayed the rule by %s", got)
	}
	// An entry found in place (not written by this process) is settled.
	if got := s.propagating([]string{"other"}, rule, t0); got != 0 {
		t.Fatalf("pre-existing entry: wait %s, want 0", got)
	}
	// A resource dropped from the configuration is forgotten, so adding it
	// back waits again.
	s.recordWritten("net", []schema.GroupVersionResource{subnets}, nil, t0.Add(20*time.Second))
	s.recordWritten("net", []schema.GroupVersionResource{subnets, vpcs}, map[schema.GroupVersionResource]bool{vpcs: true}, t0.Add(21*time.Second))
	if got := s.propagating([]string{"net"}, rule, t0.Add(21*time.Second)); got != 5*time.Second {
		t.Fatalf("re-added: wait %s, want 5s", got)
	}
}

// TestPropagatingStatusStable: while a rule waits for its entries to
// propagate, runs at different times plan the same WebhookInstalled, so
// they do not rewrite its status each time.
func TestPropagatingStatusStable(t *testing.T) {
	vpcs := gvr("network.test.io", "vpcs")
	s := NewSyncer(nil, nil, nil, logr.Discard())
	t0 := time.Now()
	rule := RuleInput{Dependencies: []DependencyInput{{GVR: vpcs}}}
	s.recordWritten("net", []schema.GroupVersionResource{vpcs}, map[schema.GroupVersionResource]bool{vpcs: true}, t0)

	var planned []Outcome
	for _, at := range []time.Duration{0, 700 * time.Millisecond, 1500 * time.Millisecond} {
		rp := &RulePlan{Targets: []string{"net"}, Installed: Outcome{OK: true, Reason: "Installed"}}
		if wait := s.holdForPropagation(rp, rule, t0.Add(at)); wait != s.Propagation-at {
			t.Fatalf("at %s: wait %s, want %s", at, wait, s.Propagation-at)
		}
		planned = append(planned, rp.Installed)
	}
	for _, o := range planned[1:] {
		if o != planned[0] || o.Reason != "Propagating" {
			t.Fatalf("WebhookInstalled changes while propagating: %+v", planned)
		}
	}
	// Once propagated, the installed outcome stands; one not installed is
	// never reported as propagating.
	for _, installed := range []Outcome{{OK: true, Reason: "Installed"}, {Reason: "InstallFailed"}} {
		rp := &RulePlan{Targets: []string{"net"}, Installed: installed}
		at := t0.Add(s.Propagation)
		if !installed.OK {
			at = t0
		}
		if wait := s.holdForPropagation(rp, rule, at); wait != 0 || rp.Installed != installed {
			t.Fatalf("%+v: wait %s, outcome %+v", installed, wait, rp.Installed)
		}
	}
}
