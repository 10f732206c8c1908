// Package rbac renders the RBAC objects the runtime identities need, in each
// place of a kcp topology where they are needed. The Terraform provider
// applies them and the integration tests bootstrap with them, so both grant
// exactly the same access.
package rbac

import (
	"fmt"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Names of the objects this package renders. They are stable: Terraform
// imports them by name and upgrades must find them again.
const (
	WorkspaceReaderName = "depctrl:controller:workspace-reader"
	ExportAccessName    = "depctrl:runtime:export-access"
	ShardReaderName     = "depctrl:webhook:reader"
	managedByLabel      = "app.kubernetes.io/managed-by"
	managedByValue      = "depctrl"
)

// Grant is a ClusterRole and the ClusterRoleBinding that gives it to
// subjects, both named alike.
type Grant struct {
	Role    *rbacv1.ClusterRole
	Binding *rbacv1.ClusterRoleBinding
}

// kcp admits a user into a workspace only with verb "access" on the
// non-resource URL "/" there, before any other RBAC is considered.
var workspaceAccess = rbacv1.PolicyRule{NonResourceURLs: []string{"/"}, Verbs: []string{"access"}}

// eventWriter lets the webhook record an Event on an object deleted with
// the skip-protection annotation, in that object's workspace.
var eventWriter = rbacv1.PolicyRule{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create"}}

// WorkspaceReader lets the controller read Workspace objects, which is how
// it resolves a path such as root:org:network to a logical cluster. It
// belongs in root and in every intermediate workspace of a protected path.
func WorkspaceReader(subjects []rbacv1.Subject) Grant {
	return grant(WorkspaceReaderName, subjects,
		workspaceAccess,
		rbacv1.PolicyRule{APIGroups: []string{"tenancy.kcp.io"}, Resources: []string{"workspaces"}, Verbs: []string{"get", "list", "watch"}},
	)
}

// ExportAccess lets the runtime identities use the dep-ctrl APIExport: find
// its virtual workspace URLs, read and write through the virtual workspace
// (rules and their status, and the claimed webhook configurations), hold the
// controller's leader-election lease, and record events. It belongs in the
// dep-ctrl workspace.
func ExportAccess(exportName string, subjects []rbacv1.Subject) Grant {
	return grant(ExportAccessName, subjects,
		workspaceAccess,
		rbacv1.PolicyRule{APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apiexportendpointslices"}, Verbs: []string{"get", "list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apiexports"}, ResourceNames: []string{exportName}, Verbs: []string{"get", "list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apiexports/content"}, ResourceNames: []string{exportName}, Verbs: []string{"*"}},
		rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		rbacv1.PolicyRule{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
	)
}

// ReadResource names what the webhook may read on a shard: a group and
// resource, "*" for all.
type ReadResource struct {
	Group    string
	Resource string
}

// ShardAccess narrows what the webhook may read on a shard.
type ShardAccess struct {
	// Dependents are the types whose objects hold references; none means
	// read on everything, secrets included.
	Dependents []ReadResource
	// Protected are the types rules protect: the webhook reads and patches
	// one object of them at a time, to record on it the intent of a write
	// that newly references it (and to refuse that write when the object
	// is being deleted). With Dependents; otherwise everything is read
	// and may be patched, and Protected names only what DeferredDeletion
	// may delete.
	Protected []ReadResource
	// Reindex also grants patch on Dependents, so that the webhook can
	// write again (with an empty patch) the dependents it finds without a
	// current index stamp and have them indexed. It matters only with
	// Dependents: the wildcard grant patches everything already.
	Reindex bool
	// DeferredDeletion lets the webhook carry out the deletions it
	// deferred (its --deferred-deletion): delete on the Protected types
	// and nothing else, create on SubjectAccessReviews, to check that
	// whoever asked for a deletion may still delete the object when it is
	// carried out, and, with Dependents, get on Namespaces, to read a
	// namespace's opt-in annotation (the wildcard grant reads them
	// already). It needs Protected also without Dependents: the wildcard
	// grant reads and patches everything, but it deletes only the types
	// named, so that turning deferral on never makes every type on the
	// shard deletable. Off, the webhook can delete nothing, which is what
	// it needs without deferred deletion.
	DeferredDeletion bool
}

// logicalClusterReader lets a narrowed webhook tell whether a workspace is
// being deleted: a deletion there is then allowed whatever references what,
// so a workspace's teardown never waits on the other reads.
var logicalClusterReader = rbacv1.PolicyRule{APIGroups: []string{"core.kcp.io"}, Resources: []string{"logicalclusters"}, Verbs: []string{"get"}}

// bindingReader lets a narrowed webhook tell whether a workspace binds the
// export that serves a dependent type: a workspace may serve a type of the
// same group and resource from a CRD of its own, whose objects are no
// dependents. Without it every such object counts as one.
var bindingReader = rbacv1.PolicyRule{APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apibindings"}, Verbs: []string{"list"}}

// workspaceLister lets a narrowed webhook walk the workspace tree to find
// the protected objects no request has shown it, so that they are settled
// (the webhook's --settle-walk-rate).
var workspaceLister = rbacv1.PolicyRule{APIGroups: []string{"tenancy.kcp.io"}, Resources: []string{"workspaces"}, Verbs: []string{"list"}}

// accessReviewer lets a webhook that carries out deferred deletions ask,
// before each, whether the user who asked for it may still delete the
// object: the deletion is made with the webhook's own identity, so it must
// not do what that user no longer may. Only with
// ShardAccess.DeferredDeletion.
var accessReviewer = rbacv1.PolicyRule{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}}

// namespaceReader lets a narrowed webhook read whether a namespace opts
// its objects into deferred deletion (its defer-deletion annotation). Only
// with ShardAccess.DeferredDeletion; the wildcard grant reads namespaces
// already.
var namespaceReader = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}}

// ShardReader lets the webhook read dependents in every workspace of one
// shard, and record intents on the objects they reference. It belongs in
// that shard's system:admin logical cluster, whose RBAC kcp consults for
// every workspace on the shard (and only on that shard). Without
// access.Dependents it grants read on everything, secrets included, and
// patch on everything (the webhook patches only objects that rules protect,
// and only their intent annotations); naming the types narrows it. With
// access.DeferredDeletion the webhook may also delete the access.Protected
// types, and only those, whether or not the rest is narrowed: with no
// Protected types it may delete nothing, and a deferred deletion fails
// with a permission error when it is carried out.
func ShardReader(subjects []rbacv1.Subject, access ShardAccess) Grant {
	rules := []rbacv1.PolicyRule{workspaceAccess, eventWriter}
	if len(access.Dependents) == 0 {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch", "patch"}})
		if access.DeferredDeletion {
			rules = append(rules, accessReviewer)
			rules = append(rules, byGroup(access.Protected, []string{"delete"})...)
		}
		return grant(ShardReaderName, subjects, rules...)
	}
	verbs := []string{"get", "list", "watch"}
	if access.Reindex {
		verbs = append(verbs, "patch")
	}
	protectedVerbs := []string{"get", "list", "patch"}
	rules = append(rules, logicalClusterReader, bindingReader, workspaceLister)
	if access.DeferredDeletion {
		protectedVerbs = append(protectedVerbs, "delete")
		rules = append(rules, accessReviewer, namespaceReader)
	}
	rules = append(rules, byGroup(access.Dependents, verbs)...)
	rules = append(rules, byGroup(access.Protected, protectedVerbs)...)
	return grant(ShardReaderName, subjects, rules...)
}

// byGroup renders one rule per API group, groups and resources sorted.
func byGroup(resources []ReadResource, verbs []string) []rbacv1.PolicyRule {
	groups := map[string][]string{}
	for _, r := range resources {
		groups[r.Group] = append(groups[r.Group], r.Resource)
	}
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	var rules []rbacv1.PolicyRule
	for _, g := range names {
		res := groups[g]
		sort.Strings(res)
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: res, Verbs: append([]string(nil), verbs...)})
	}
	return rules
}

// ParseReadResource parses "resource.group" (or "resource" for the core
// group, "*" for everything in a group as "*.group").
func ParseReadResource(s string) (ReadResource, error) {
	if s == "" || strings.ContainsAny(s, " /") {
		return ReadResource{}, fmt.Errorf("%q is not of the form resource.group (for example virtualmachines.compute.example.io)", s)
	}
	resource, group, _ := strings.Cut(s, ".")
	return ReadResource{Group: group, Resource: resource}, nil
}

// User and Group build subjects.
func User(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

// Group builds a group subject.
func Group(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func grant(name string, subjects []rbacv1.Subject, rules ...rbacv1.PolicyRule) Grant {
	meta := metav1.ObjectMeta{Name: name, Labels: map[string]string{managedByLabel: managedByValue}}
	return Grant{
		Role: &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: meta,
			Rules:      rules,
		},
		Binding: &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: *meta.DeepCopy(),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   subjects,
		},
	}
}
