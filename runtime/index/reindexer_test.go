package index

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// patchServer answers merge patches of dependents as an API server does:
// 200 in cluster "ok", 404 for objects called "gone", 403 in cluster
// "denied"; it records every request.
type patchServer struct {
	mu       sync.Mutex
	requests []string
	bad      []string
}

func (s *patchServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, r.URL.Path)
	if r.Method != http.MethodPatch || r.Header.Get("Content-Type") != "application/merge-patch+json" || string(body) != "{}" ||
		r.URL.Query().Get("fieldManager") != "depctrl-webhook" {
		s.bad = append(s.bad, fmt.Sprintf("%s %s %s %s", r.Method, r.URL, r.Header.Get("Content-Type"), body))
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	status, reason := http.StatusOK, ""
	switch {
	case strings.HasPrefix(r.URL.Path, "/clusters/denied/"):
		status, reason = http.StatusForbidden, "Forbidden"
	case strings.HasSuffix(r.URL.Path, "/gone"):
		status, reason = http.StatusNotFound, "NotFound"
	}
	w.WriteHeader(status)
	if status != http.StatusOK {
		_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":%q,"code":%d}`, reason, status)
		return
	}
	_, _ = w.Write([]byte(`{"apiVersion":"compute.test.io/v1","kind":"VirtualMachine","metadata":{"name":"x"}}`))
}

func (s *patchServer) paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]string(nil), s.requests...)
	sort.Strings(out)
	return out
}

func TestReindexer(t *testing.T) {
	vms := schema.GroupVersionResource{Group: "compute.test.io", Version: "v1", Resource: "virtualmachines"}
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	server := &patchServer{}
	srv := httptest.NewServer(server)
	defer srv.Close()
	raw, err := rest.UnversionedRESTClientFor(&rest.Config{Host: srv.URL,
		ContentConfig: rest.ContentConfig{NegotiatedSerializer: scheme.Codecs.WithoutConversion()}})
	if err != nil {
		t.Fatal(err)
	}
	r := NewReindexer(raw, 1, logr.Discard())
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var clockMu sync.Mutex
	r.now = func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return clock }
	advance := func(d time.Duration) { clockMu.Lock(); clock = clock.Add(d); clockMu.Unlock() }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { _ = r.Start(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	// await waits until the server has had want requests in all and the
	// reindexer has nothing queued.
	await := func(want int) []string {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			r.mu.Lock()
			idle := len(r.queued) == 0 && len(r.queue) == 0
			r.mu.Unlock()
			got := server.paths()
			if idle && len(got) >= want {
				// Let a request that should not come have its chance.
				time.Sleep(20 * time.Millisecond)
				return server.paths()
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 10s: %d requests %v, want %d", len(got), got, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	written := func() float64 { return testutil.ToFloat64(reindexed.WithLabelValues(reindexWritten)) }
	forbidden := func() float64 { return testutil.ToFloat64(reindexed.WithLabelValues(reindexRefused)) }
	writtenBefore, forbiddenBefore := written(), forbidden()

	// The same dependent twice in one lookup, and in another, is written once.
	r.Enqueue("ok", vms, []ObjectKey{{"apps", "vm-1"}, {"apps", "vm-2"}, {"apps", "vm-1"}, {"apps", "gone"}})
	r.Enqueue("ok", vms, []ObjectKey{{"apps", "vm-2"}})
	r.Enqueue("ok", configMaps, []ObjectKey{{"default", "cm-1"}})
	want := []string{
		"/clusters/ok/api/v1/namespaces/default/configmaps/cm-1",
		"/clusters/ok/apis/compute.test.io/v1/namespaces/apps/virtualmachines/gone",
		"/clusters/ok/apis/compute.test.io/v1/namespaces/apps/virtualmachines/vm-1",
		"/clusters/ok/apis/compute.test.io/v1/namespaces/apps/virtualmachines/vm-2",
	}
	if got := await(len(want)); !reflect.DeepEqual(got, want) {
		t.Fatalf("patched %q\nwant %q", got, want)
	}
	if got := written() - writtenBefore; got != 3 {
		t.Errorf("written %v, want 3 (the fourth was gone)", got)
	}

	// Found again soon after: not written again; a minute later it is.
	r.Enqueue("ok", vms, []ObjectKey{{"apps", "vm-1"}})
	if got := await(len(want)); len(got) != len(want) {
		t.Fatalf("a dependent written moments ago was written again: %q", got)
	}
	advance(reindexRecent)
	r.Enqueue("ok", vms, []ObjectKey{{"apps", "vm-1"}})
	if got := await(len(want) + 1); len(got) != len(want)+1 {
		t.Fatalf("requests after the recent window = %q, want one more", got)
	}

	// A workspace that refuses is asked about one of its dependents, then
	// left alone for that type, and asked again once the refusal expires.
	r.Enqueue("denied", vms, []ObjectKey{{"apps", "vm-1"}})
	await(len(want) + 2)
	r.Enqueue("denied", vms, []ObjectKey{{"apps", "vm-2"}, {"apps", "vm-3"}})
	if got := await(len(want) + 2); len(got) != len(want)+2 {
		t.Fatalf("a workspace that refused was asked again at once: %q", got)
	}
	if got := forbidden() - forbiddenBefore; got != 1 {
		t.Errorf("forbidden %v, want 1", got)
	}
	advance(reindexRefusedFor)
	r.forget()
	r.Enqueue("denied", vms, []ObjectKey{{"apps", "vm-2"}})
	if got := await(len(want) + 3); len(got) != len(want)+3 {
		t.Fatalf("requests after the refusal expired = %q, want one more", got)
	}

	server.mu.Lock()
	defer server.mu.Unlock()
	if len(server.bad) > 0 {
		t.Fatalf("requests that are not an empty merge patch by depctrl-webhook: %q", server.bad)
	}
}

func TestReindexerQueueFull(t *testing.T) {
	vms := schema.GroupVersionResource{Group: "compute.test.io", Version: "v1", Resource: "virtualmachines"}
	r := NewReindexer(nil, 1, logr.Discard())
	r.queue = make(chan reindexItem, 2)
	before := testutil.ToFloat64(reindexed.WithLabelValues(reindexDropped))
	// Not started: nothing drains the queue, and Enqueue must not block.
	r.Enqueue("c", vms, []ObjectKey{{"a", "1"}, {"a", "2"}, {"a", "3"}})
	if got := testutil.ToFloat64(reindexed.WithLabelValues(reindexDropped)) - before; got != 1 {
		t.Fatalf("dropped %v, want 1", got)
	}
	if len(r.queued) != 2 {
		t.Fatalf("queued %v, want the two that fit", r.queued)
	}
	// Dropped is not remembered as queued: a later deletion may find it.
	r.Enqueue("c", vms, []ObjectKey{{"a", "3"}})
	if got := testutil.ToFloat64(reindexed.WithLabelValues(reindexDropped)) - before; got != 2 {
		t.Fatalf("dropped %v after a second try, want 2", got)
	}
}
