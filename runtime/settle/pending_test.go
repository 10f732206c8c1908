package settle

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
)

// TestPendingReferences: a mark is one Lease per workspace and type,
// renewed by a write that finds an object missing unless this replica
// stored a renewal less than renewEvery before that write looked; a write
// that stored one is told to look again.
func TestPendingReferences(t *testing.T) {
	client := fake.NewClientset()
	p := NewPendingReferences(client.CoordinationV1(), "default")
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	p.now = func() time.Time { return at }
	vpcsGR := schema.GroupResource{Group: "network.test.io", Resource: "vpcs"}
	ctx := context.Background()
	if since, err := p.PendingSince(ctx, "c1", vpcsGR); err != nil || !since.IsZero() {
		t.Fatalf("before any mark: %v, %v", since, err)
	}
	mark := func(lookedAt time.Time) bool {
		t.Helper()
		stored, err := p.Mark(ctx, "c1", vpcsGR, lookedAt)
		if err != nil {
			t.Fatal(err)
		}
		return stored
	}
	if !mark(at) {
		t.Fatal("the first mark was not stored")
	}
	first := at
	at = at.Add(5 * time.Second)
	if mark(at) {
		t.Error("a write that looked 5 s after a stored renewal stored another")
	}
	if !mark(first.Add(-time.Second)) {
		t.Error("a write that looked before the renewal was stored relied on it")
	}
	at = at.Add(renewEvery)
	if !mark(at) {
		t.Error("a write renewEvery after the last renewal did not renew")
	}
	since, err := p.PendingSince(ctx, "c1", vpcsGR)
	if err != nil || !since.Equal(at) {
		t.Fatalf("PendingSince = %v, %v; want the last renewal %v", since, err, at)
	}
	if since, _ := p.PendingSince(ctx, "c2", vpcsGR); !since.IsZero() {
		t.Error("another workspace has a mark it never got")
	}
	leases, _ := client.CoordinationV1().Leases("default").List(ctx, metav1.ListOptions{})
	if len(leases.Items) != 1 {
		t.Errorf("%d leases, want one per workspace and type", len(leases.Items))
	}
}
