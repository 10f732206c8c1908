package controller

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestReadyCheck(t *testing.T) {
	live := func(context.Context) (bool, error) { return true, nil }
	none := func(context.Context) (bool, error) { return false, nil }
	broken := func(context.Context) (bool, error) { return false, errors.New("forbidden") }
	unread := unreadRules{"comp/vm": {UnreadWorkspace: "reading workspace \"root:org:network\": forbidden"}}
	tests := []struct {
		name            string
		leading, synced bool
		// unread is what the last run could not read.
		unread     unreadRules
		otherLeads func(context.Context) (bool, error)
		wantReady  bool
	}{
		{"leader before its first sync", true, false, nil, live, false},
		{"leader after a sync", true, true, nil, nil, true},
		{"leader after a sync that read every rule", true, true, unreadRules{}, nil, true},
		{"leader after a sync that could not read a rule's workspace", true, true, unread, nil, false},
		{"standby while another replica leads", false, false, nil, live, true},
		{"standby with no live leader", false, false, nil, none, false},
		{"standby that cannot read the lease", false, false, nil, broken, false},
		{"not started, no leader election", false, false, nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Syncer{}
			s.leading.Store(tt.leading)
			s.synced.Store(tt.synced)
			if tt.unread != nil {
				s.unread.Store(&tt.unread)
			}
			err := s.ReadyCheck(tt.otherLeads)(httptest.NewRequest("GET", "/readyz", nil))
			if (err == nil) != tt.wantReady {
				t.Fatalf("ready = %v (%v), want %v", err == nil, err, tt.wantReady)
			}
		})
	}
}

func TestLeaseLive(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lease := func(holder string, renewed time.Duration) *coordinationv1.Lease {
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: &metav1.MicroTime{Time: now.Add(-renewed)},
		}}
	}
	for _, tt := range []struct {
		name  string
		lease *coordinationv1.Lease
		want  bool
	}{
		{"renewed recently", lease("a", 2*time.Second), true},
		{"expired", lease("a", 20*time.Second), false},
		{"released", lease("", time.Second), false},
		{"never held", &coordinationv1.Lease{}, false},
	} {
		if got := leaseLive(tt.lease, now); got != tt.want {
			t.Errorf("%s: live = %v, want %v", tt.name, got, tt.want)
		}
	}
}
