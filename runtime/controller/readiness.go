package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ReadyCheck is the controller's readiness: ready means the webhook
// configurations are in place as far as this replica can tell. The leader
// is ready once a run since it was elected has put every configuration the
// rules want in place; until then one someone deleted meanwhile may still
// be missing. It is not ready while the last run could not read what some
// rule needs (a workspace path, an export): what is installed for such a
// rule is kept, but cannot be checked. A standby
// writes nothing, and is ready while another replica leads (otherLeads);
// without leader election this replica always leads.
func (s *Syncer) ReadyCheck(otherLeads func(context.Context) (bool, error)) func(*http.Request) error {
	return func(req *http.Request) error {
		if s.leading.Load() {
			if !s.synced.Load() {
				return errors.New("leading, but no run has put every webhook configuration in place yet (the log says what failed)")
			}
			if u := s.unread.Load(); u != nil && len(*u) > 0 {
				return fmt.Errorf("the last run could not read what %d rule(s) need, so what is installed for them is kept and cannot be checked: %s", len(*u), *u)
			}
			return nil
		}
		if otherLeads == nil {
			return errors.New("not leading yet")
		}
		ok, err := otherLeads(req.Context())
		if err != nil {
			return fmt.Errorf("reading the leader election lease: %w", err)
		}
		if !ok {
			return errors.New("not leading, and no other replica holds a live lease")
		}
		return nil
	}
}

// LeaseHeld reports whether the lease called name in namespace is held and
// was renewed within its duration: some replica is alive and leading.
func LeaseHeld(c kubernetes.Interface, namespace, name string, now func() time.Time) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		l, err := c.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return leaseLive(l, now()), nil
	}
}

func leaseLive(l *coordinationv1.Lease, now time.Time) bool {
	s := l.Spec
	if s.HolderIdentity == nil || *s.HolderIdentity == "" || s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return false
	}
	return now.Before(s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second))
}
