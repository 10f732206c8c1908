package provider

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

func TestWaitUntilWoken(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "things"}, "a", errors.New("no"))
	for _, tc := range []struct {
		name string
		// results cond returns, one per call; the last repeats.
		results []error
		doneAt  int
		woken   bool
		timeout time.Duration
		wantErr string
		calls   int
	}{
		{name: "done at once", doneAt: 1, timeout: time.Second, calls: 1},
		// The timeout is shorter than pollInterval: only a wake can bring
		// the second check in time.
		{name: "a wake checks again before the next poll", doneAt: 2, woken: true, timeout: pollInterval / 2, calls: 2},
		{name: "without a wake the poll is too late", doneAt: 2, timeout: pollInterval / 2, wantErr: "waiting for the thing; last seen: state 1", calls: 1},
		{name: "a permanent error stops at once", results: []error{permanent(errors.New("cycle"))}, timeout: time.Second, wantErr: "cycle", calls: 1},
		{name: "forbidden stops at once", results: []error{forbidden}, timeout: time.Second, wantErr: "forbidden", calls: 1},
		{name: "a transient error is named on timeout", results: []error{errors.New("shard restarting")}, timeout: pollInterval / 2, wantErr: "last seen: state 1: shard restarting", calls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var wake chan struct{}
			if tc.woken {
				wake = make(chan struct{}, 1)
				wake <- struct{}{}
			}
			calls := 0
			err := waitUntilWoken(context.Background(), tc.timeout, "the thing", wake, func(context.Context) (bool, string, error) {
				calls++
				var err error
				if len(tc.results) > 0 {
					err = tc.results[min(calls, len(tc.results))-1]
				}
				return calls == tc.doneAt, "state " + string(rune('0'+calls)), err
			})
			if tc.wantErr == "" && err != nil {
				t.Fatalf("err = %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
			if calls != tc.calls {
				t.Fatalf("cond called %d times, want %d", calls, tc.calls)
			}
		})
	}
}

// TestWakeOnChange: a change to the watched object wakes the waiter.
func TestWakeOnChange(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "test.io", Version: "v1", Resource: "things"}
	thing := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "test.io/v1", "kind": "Thing", "metadata": map[string]interface{}{"name": "a"}}}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ThingList"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wake, stop := wakeOnChange(ctx, client.Resource(gvr), "a")
	defer stop()
	if wake == nil {
		t.Fatal("no watch")
	}
	if _, err := client.Resource(gvr).Create(ctx, thing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		t.Fatal("the create did not wake the waiter")
	}
}
