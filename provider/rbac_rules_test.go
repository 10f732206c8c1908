package provider

import (
	"context"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
)

// TestSplitSubjects: a binding's subjects read back as the users and groups
// the provider writes, and a ServiceAccount added by hand as the user it
// stands for, so that the plan shows it and apply takes it away.
func TestSplitSubjects(t *testing.T) {
	users, groups := splitSubjects([]rbacv1.Subject{
		rbac.User("depctrl-webhook"), rbac.Group("depctrl"),
		{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: "intruder"},
	})
	var us, gs []string
	_ = users.ElementsAs(context.Background(), &us, false)
	_ = groups.ElementsAs(context.Background(), &gs, false)
	slices.Sort(us)
	if want := []string{"depctrl-webhook", "system:serviceaccount:kube-system:intruder"}; !slices.Equal(us, want) {
		t.Errorf("users = %v, want %v", us, want)
	}
	if want := []string{"depctrl"}; !slices.Equal(gs, want) {
		t.Errorf("groups = %v, want %v", gs, want)
	}
}
