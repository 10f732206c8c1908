package settle

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
)

// TestPendingReferences: a mark is a Lease named after the object, renewed
// by each write; an object never referenced while absent has none.
func TestPendingReferences(t *testing.T) {
	client := fake.NewClientset()
	p := NewPendingReferences(client.CoordinationV1(), "default")
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	p.now = func() time.Time { return at }
	vpcsGR := schema.GroupResource{Group: "network.test.io", Resource: "vpcs"}
	ctx := context.Background()
	if since, err := p.PendingSince(ctx, "c1", vpcsGR, "vpc-1"); err != nil || !since.IsZero() {
		t.Fatalf("before any mark: %v, %v", since, err)
	}
	if err := p.Mark(ctx, "c1", vpcsGR, "vpc-1"); err != nil {
		t.Fatal(err)
	}
	at = at.Add(time.Minute)
	if err := p.Mark(ctx, "c1", vpcsGR, "vpc-1"); err != nil {
		t.Fatal(err)
	}
	since, err := p.PendingSince(ctx, "c1", vpcsGR, "vpc-1")
	if err != nil || !since.Equal(at) {
		t.Fatalf("PendingSince = %v, %v; want the last mark %v", since, err, at)
	}
	for _, other := range []struct{ cluster, name string }{{"c2", "vpc-1"}, {"c1", "vpc-2"}} {
		if since, _ := p.PendingSince(ctx, other.cluster, vpcsGR, other.name); !since.IsZero() {
			t.Errorf("%s/%s has a mark it never got", other.cluster, other.name)
		}
	}
	leases, _ := client.CoordinationV1().Leases("default").List(ctx, metav1.ListOptions{})
	if len(leases.Items) != 1 {
		t.Errorf("%d leases, want one per object", len(leases.Items))
	}
}
