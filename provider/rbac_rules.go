package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/types"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
)

// ruleStrings renders policy rules one per line, so that a rule changed
// outside Terraform shows in the plan as exactly that rule.
func ruleStrings(rules []rbacv1.PolicyRule) []string {
	out := make([]string, 0, len(rules))
	for _, r := range rules {
		var parts []string
		add := func(label string, vals []string) {
			if len(vals) > 0 {
				parts = append(parts, fmt.Sprintf("%s=%s", label, strings.Join(vals, ",")))
			}
		}
		groups := make([]string, len(r.APIGroups))
		for i, g := range r.APIGroups {
			if g == "" {
				g = `""`
			}
			groups[i] = g
		}
		add("groups", groups)
		add("resources", r.Resources)
		add("names", r.ResourceNames)
		add("urls", r.NonResourceURLs)
		add("verbs", r.Verbs)
		out = append(out, strings.Join(parts, " "))
	}
	sort.Strings(out)
	return out
}

// subjectsFrom turns user and group names into RBAC subjects, sorted so
// that the applied binding does not depend on set iteration order.
func subjectsFrom(users, groups []string) []rbacv1.Subject {
	sort.Strings(users)
	sort.Strings(groups)
	var out []rbacv1.Subject
	for _, u := range users {
		out = append(out, rbac.User(u))
	}
	for _, g := range groups {
		out = append(out, rbac.Group(g))
	}
	return out
}

// splitSubjects is the inverse of subjectsFrom, for reading a binding back.
// A ServiceAccount subject, which the provider never writes, is read as the
// user it stands for (system:serviceaccount:<namespace>:<name>), so that one
// added by hand shows in the plan and apply takes it away.
func splitSubjects(subjects []rbacv1.Subject) (users, groups types.Set) {
	var us, gs []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			us = append(us, s.Name)
		case rbacv1.ServiceAccountKind:
			us = append(us, "system:serviceaccount:"+s.Namespace+":"+s.Name)
		case rbacv1.GroupKind:
			gs = append(gs, s.Name)
		}
	}
	return stringSet(us), stringSet(gs)
}

func stringSet(vals []string) types.Set {
	elems := make([]string, len(vals))
	copy(elems, vals)
	s, _ := types.SetValueFrom(context.Background(), types.StringType, elems)
	return s
}

func stringList(vals []string) types.List {
	elems := make([]string, len(vals))
	copy(elems, vals)
	l, _ := types.ListValueFrom(context.Background(), types.StringType, elems)
	return l
}

// renamed returns g with its ClusterRole and ClusterRoleBinding called name,
// so that two installations (or tests) can share a workspace.
func renamed(g rbac.Grant, name string) rbac.Grant {
	if name == "" || name == g.Role.Name {
		return g
	}
	role, binding := g.Role.DeepCopy(), g.Binding.DeepCopy()
	role.Name, binding.Name, binding.RoleRef.Name = name, name, name
	return rbac.Grant{Role: role, Binding: binding}
}
